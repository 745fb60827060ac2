"""The outbound PII filter's own rules: Australian details found by their shape or their cue
words (street addresses, dates of birth, bank details, driver licence and passport numbers),
e-mail addresses on any domain, and what is not a person's name although a model or a cue took it
for one (labels, titles, pronouns, job titles, firms, parts of addresses). ``pii`` builds the
recognizers from them."""

from __future__ import annotations

import re

_STREET_TYPES = (
    r"Street|St|Road|Rd|Avenue|Ave|Drive|Dr|Court|Ct|Place|Pl|Crescent|Cres|Lane|Ln|Parade|Pde|"
    r"Terrace|Tce|Way|Close|Cl|Highway|Hwy|Boulevard|Blvd|Circuit|Cct|Grove|Gr|Square|Sq|"
    r"Esplanade|Esp|Rise|Mews|Track|Trail|Loop|Walk|Row|Gardens|Gdns"
)
_STATES = r"NSW|VIC|Vic|QLD|Qld|SA|WA|TAS|Tas|NT|ACT"
#: "Unit 4/27 Smith Street, Paddington NSW 2021", "12A Ocean Pde", "PO Box 88, Hobart TAS 7001".
AU_ADDRESS = (
    r"(?<![\w/])(?:(?:Unit|Apt|Apartment|Flat|Suite|Level|Lvl)\s*\d+[A-Za-z]?\s*[,/]?\s*)?"
    r"\d{1,5}[A-Za-z]?(?:\s*[/-]\s*\d{1,5}[A-Za-z]?)?\s+"
    r"(?:[A-Z][a-z'’-]+\s+){1,3}(?:" + _STREET_TYPES + r")\b\.?"
    r"(?:,?\s+(?:[A-Z][a-z'’-]+\s+){0,2}[A-Z][a-z'’-]+(?:,?\s+(?:" + _STATES + r"))?"
    r"(?:,?\s+\d{4})?)?"
    r"|\b(?:PO|P\.O\.|Post Office)\s+Box\s+\d{1,6}(?:,?\s+[A-Z][a-z'’-]+(?:\s+[A-Z][a-z'’-]+)?"
    r"(?:,?\s+(?:" + _STATES + r"))?(?:,?\s+\d{4})?)?"
)
_MONTHS = (
    r"Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?|"
    r"Sep(?:t(?:ember)?)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?"
)
_DATE = (
    r"(?:\d{1,2}[/.-]\d{1,2}[/.-](?:\d{4}|\d{2})|\d{4}-\d{2}-\d{2}|"
    r"\d{1,2}(?:st|nd|rd|th)?\s+(?:of\s+)?(?:" + _MONTHS + r")\.?,?\s+\d{4}|"
    r"(?:" + _MONTHS + r")\.?\s+\d{1,2}(?:st|nd|rd|th)?,?\s+\d{4})"
)
#: A date with a birth cue before it: "DOB 03/04/1987", "date of birth: 3 April 1987", "born on…".
DATE_OF_BIRTH = (
    r"(?i:\b(?:d\.?o\.?b\.?|date\s+of\s+birth|birth\s*date|birthday|born(?:\s+on)?)"
    r"\s*(?:is|was|:|-)?\s*)(" + _DATE + r")"
    # "the DOB we have on file for your mother … is 08/04/1951": the date later in the sentence
    r"|(?i:\b(?:d\.?o\.?b\.?|date\s+of\s+birth|birth\s*date)\b[^.;!?\n\d]{1,70}?\b(?:is|was|as|:)"
    r"\s*)(" + _DATE + r")"
)
BSB = r"(?i:\bBSB\s*(?:no\.?|number|#)?\s*[:#-]?\s*)(\d{3}[- ]?\d{3})(?!\d)"
BANK_ACCOUNT = (
    r"(?i:\b(?:account|acc|acct|a/c)\s*(?:no\.?|number|num|#)?\s*[:#-]?\s*)"
    r"(\d{2,4}(?:[- ]?\d{3,4}){1,2})(?!\d)"
)
DRIVER_LICENCE = (
    r"(?i:\b(?:driver'?s?\s+)?licen[cs]e\s*(?:no\.?|number|num|#)?\s*(?:is|:|#|-)?\s*)"
    r"((?=[A-Z0-9]*\d)[A-Z0-9]{5,10})(?![\w])"
)
#: A tax file number or a Medicare number after its cue, whatever its check digit says (a number
#: mistyped by one digit is still the person's): "TFN (for your claim) is 457892316",
#: "Medicare 3081 45927 2, IRN 4", "Medicare: 2953 71824 1-3".
#: The words between a cue and its number: not another number's label, not a new sentence.
_CUE_GAP = (
    r"(?:(?!\b(?:invoice|inv|ref|reference|batch|member|account|acc|order|receipt|abn|usi)\b|"
    r"[.!?]\s+[A-Z])[^\d\n])"
)
TFN = (
    r"(?i:\b(?:tfn|tax file (?:number|no\.?))\b" + _CUE_GAP + r"{0,40}?)"
    r"(\d{3}[ -]?\d{3}[ -]?\d{2,3})(?![\d])"
)
MEDICARE = (
    r"(?i:\bmedicare\b(?:\s*(?:card|no\.?|number|#))*" + _CUE_GAP + r"{0,20}?)"
    r"(\d{4}[ ]?\d{5}[ ]?\d(?:[ ]?[-/][ ]?\d|,?[ ]?(?i:irn)[ :]*\d)?)(?![\d])"
)
#: An address after "address:" or "lives at", in any case ("address: 12a grace st, lakemba nsw
#: 2195"), to the end of its line or sentence.
CUED_ADDRESS = (
    r"(?i:\b(?:(?:home|residential|postal|street|current|new)\s+)?address(?:\s+is)?\s*[:-]\s*|"
    r"\b(?:lives|living|moved) (?:at|to)\s+)"
    # an address has a street's word, a state or a postcode ("moved to 3 days a week" has none)
    r"((?=[^\n;]{0,60}?\b(?:\d{4}|(?i:st|street|rd|road|ave|avenue|cres|crescent|dr|drive|pl|"
    r"place|ct|court|cl|close|pde|parade|hwy|highway|lane|ln|way|tce|terrace|blvd|cct|circuit|"
    r"gr|grove|loop|nsw|vic|qld|wa|sa|tas|act|nt))\b)"
    r"(?i:(?:unit|u|lot|apt|flat|shop)\s*)?\d{1,5}[a-zA-Z]?(?:/\d{1,5}[a-zA-Z]?)?[ \t]+"
    r"[^\W\d_][^\n;]{2,80}?|(?i:p\.?\s?o\.?\s?box)\s+\d{1,6}[^\n;]{0,60}?)"
    # to the end of its line or sentence, or of the address ("… Penrith with his brother")
    r"(?=[ \t]*(?:\n|$|;|\.(?:\s|$)|\))|"
    r",?\s+(?:with|and|last|since|from|on|for|because|is|has|but|in)\b)"
)
PASSPORT = r"(?i:\bpassport\s*(?:no\.?|number|num|#)?\s*(?:is|:|#|-)?\s*)([A-Z]{1,2}\d{6,8})(?!\w)"
#: Any address@domain (presidio's own recognizer insists on a known top-level domain).
ANY_EMAIL = r"(?<![\w.+-])[\w.+-]+@[\w-]+(?:\.[\w-]+)+(?![\w@-])"


#: Words that are never a name on their own: titles, pronouns, form labels, job titles.
_NOT_NAMES = frozenset(
    (
        # days as rosters write them
        "mon",
        "tue",
        "tues",
        "wed",
        "thu",
        "thur",
        "thurs",
        "fri",
        "sat",
        "sun",
        "name",
        "names",
        "client",
        "carer",
        "participant",
        "resident",
        "worker",
        "coordinator",
        "zip",
        "zipcode",
        "postcode",
        "e-mail",
        "email",
        "mail",
        "personal",
        "info",
        "details",
        "directed",
        "by",
        "mr",
        "mrs",
        "ms",
        "miss",
        "dr",
        "prof",
        "sir",
        "madam",
        "she",
        "he",
        "they",
        "her",
        "his",
        "him",
        "them",
        "it",
        "we",
        "you",
        "i",
        "musicians",
        "musician",
        "salesperson",
        "packager",
        "manager",
        "director",
        "engineer",
        "nurse",
        "teacher",
        "driver",
        "coordinator",
        "officer",
        "assistant",
        "clerk",
        "consultant",
        "specialist",
        "technician",
        "administrator",
        "analyst",
        "designer",
        "developer",
        "supervisor",
        "suite",
        "apt",
        "unit",
        "street",
        "road",
        "avenue",
        "website",
        "phone",
        "mobile",
        "address",
        "user",
        "mission",
        "statement",
        "handover",
        "am",
        "pm",
    )
)
_NOT_NAME_PHRASES = frozenset(
    ("personal info", "directed by", "e-mail", "zip code", "mission statement")
)
#: Places, not people: a span ending in one of these ("Harris Park", "Leichhardt Marketplace").
_PLACE_AFTER = re.compile(
    r"^(?:Park|Marketplace|Market|Centre|Center|Plaza|Mall|Station|Square|Gardens|Reserve|"
    r"Beach|Heights|Village|Junction|Shopping|Library|Pool|Oval|Springs|Street|Strasse|Straße|"
    r"Road|Avenue|Drive|Extensions|Markets)$"
)
#: A list of surnames with a firm's ending, or named as where someone works: a firm.
_FIRM_AFTER = re.compile(
    r"^[\w ,&'’-]{0,60}?\b(?:Orchestra|Technologies|Technology|Inc|Incorporated|LLC|Ltd|Pty|Group|"
    r"Corporation|Corp|Company|Partners|Associates|Foundation|Bank|Hospital|Club|Band|Law|"
    r"Solutions|Services|Systems|Industries|Holdings|Supports|Care|Health|Physio|Physiotherapy|"
    r"Therapy|Therapies|Podiatry|Disability|Community|Pharmacy|Transport|Plan Management)\b"
)
#: Before or after one word, a place rather than a person: "in Footscray", "the Penrith house".
_IN_PLACE = re.compile(r"\b(?:in|at|near|around|outside|towards|via|into)\s+$", re.IGNORECASE)
_PLACE_NOUN = re.compile(
    r"\s+(?:house|office|station|hospital|clinic|centre|center|depot|branch|site|park|road|markets?|"
    r"street|campus|library|pool|mall|plaza|beach|river|hub)\b",
    re.IGNORECASE,
)
#: Names that are also English words, and what follows them when they are used as words: a
#: noun they qualify ("Dawn shift", "Bill payments") or, for a verb, its object ("Mark it").
_WORD_NAMES = frozenset(("bill", "grace", "dawn", "mark", "will", "faith", "hope", "joy"))
_AS_WORD = re.compile(
    r"\s+(?:shifts?|payments?|periods?|window|intake|it|them|this|that|the|as|down|off|run|"
    r"rate|date|notes?|visits?)\b"
)
_FIRM_NEXT = re.compile(
    r" (?:Supports|Care|Health|Allied|Physio|Physiotherapy|Therapy|Therapies|Podiatry|Disability|"
    r"Pharmacy|Transport|Services|Solutions|Group|Pty|Ltd|Inc|Foundation)\b"
)
#: What is said of a firm, not of a person: "… is the brainchild of", "… is a design agency".
_FIRM_IS = re.compile(
    r" is (?:the brainchild of|an? (?:[\w-]+ ){0,2}(?:agency|company|firm|startup|start-up|"
    r"business|brand|band|platform|app|provider|manufacturer|retailer|consultancy)\b"
    r"(?! (?:owner|director|member|ambassador|manager|partner|founder|consultant|coordinator|"
    r"worker|employee|operator|leader|representative|agent)))"
)
_FIRM_LIST = re.compile(r"[A-Z][\w'’-]+(?:,\s+[A-Z][\w'’-]+)+,?\s+(?:and|&)\s+[A-Z][\w'’-]+")
_FIRM_BEFORE = re.compile(r"\b(?:from|at|of|by|for|with|joined|The)\s+$")
#: Where an address starts: a cue, or a house number on a line that reads like an address.
_ADDRESS_CUE = re.compile(
    # "Address change for Siosaia Manu: …" names whose address changed, not the address
    r"(?i:\b(?:address(?!\s+(?:change|update|correction)s?\b)(?:\s+is)?\s*:?|"
    r"lives at|live at|living at|moved to|located at|"
    r"corner of|ship(?:ped)? to|deliver(?:ed)? to|post(?:ed)? to)\s+)"
)
_ADDRESSEE = re.compile(r"((?:[^\W\d_][\w'’.-]*[ \t]?){1,4}?)(?=(?:[ \t]{2,}|[ \t]*[,\n][ \t]*)\d)")
_HOUSE_NUMBER = re.compile(
    # a house number never starts with 0, is no phone number's last group ("0491 570 157 or
    # …"), and a line after it that starts with a label is no street ("Priority 1\nResident:")
    r"(?<![\w.:/-])(?<!\d{3}[ -]\d{3}[ -])(?!0)\d{1,6}[A-Za-z]?"
    r"(?:[ \t]+|[ \t]*\n[ \t]*(?![^\W\d_][\w ]{0,20}:))(?=[^\W\d_])"
    # a date, a dose, a time or a quantity is no house number ("20 April", "25 mg", "10 units")
    r"(?!(?i:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|"
    r"sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?|mon(?:day)?|tue(?:s(?:day)?)?|"
    r"wed(?:nesday)?|thu(?:rs(?:day)?)?|fri(?:day)?|sat(?:urday)?|sun(?:day)?|"
    r"mg|mcg|ml|units?|tablets?|am|pm|hours?|hrs?|min|mins|minutes|years?|yrs?|kg|km|weeks?|"
    r"days?|times|serves?|sachets?|scoops?|puffs?|drops?|caps?|capsules?|tabs?|doses?)\b)"
)
_ADDRESS_WORD = re.compile(
    r"(?i:\b(?:apt|apartment|suite|unit|box|street|str|st|road|rd|avenue|ave|lane|drive|"
    r"floor|\w+(?:vej|gade|katu|strasse|straße|straat|gatan|veien|weg|ulica|utca))\b\.?)"
)


def address_regions(text: str) -> list[tuple[int, int]]:
    """Stretches of text that are addresses (to the end of the line or sentence): after an
    address cue, or from a house number when an address word or another number follows."""
    regions = []
    for match in _ADDRESS_CUE.finditer(text):
        end = _region_end(text, match.end())
        # "Billing address: Sara Schwarz     28245 Puruntie 82": the addressee's name comes
        # first, set off by a wide gap, a comma or a line break; the address starts at the number.
        named = _ADDRESSEE.match(text, match.end())
        if named and _ADDRESS_WORD.search(named.group(1)):
            named = None  # "Lachlan Street, 4 …": a street, not a name
        regions.append((named.end(1) if named else match.end(), end))
    for match in _HOUSE_NUMBER.finditer(text):
        end = _region_end(text, match.end())
        rest = text[match.end() : end]
        if _ADDRESS_WORD.search(rest) or re.search(r"\d", rest):
            regions.append((match.start(), _block_end(text, end)))
    for match in _STREET_FIRST.finditer(text):
        regions.append((match.start(), _block_end(text, _region_end(text, match.start()))))
    return regions


#: Streets written before their number ("ul. Miła 53", "Λεωφόρος Συγγρού 119", "Árpád fejedelem
#: útja 3"): a street's word, then the number on the same line. Not "Rue", "Rua", "Calle",
#: "Piazza" (names too) nor "Út" (a Vietnamese one).
_STREET_FIRST = re.compile(
    r"(?:\b(?i:ul|avenida|strada|λεωφόρος|οδός)\.?\s+"
    r"(?:[^\W\d_][\w'’.-]*\s+){1,4}|"
    r"\b(?:[^\W\d_][\w'’.-]*\s+){1,3}(?i:útja|utca|ulica|gasse|straße|strasse)\s+)"
    r"\d{1,5}\b"
)


def _block_end(text: str, end: int) -> int:
    """An address written over several short lines ("…Apt. 864\nArtilleros\n, CO\n Uruguay
    64677") runs on to the last of the next three lines that holds a number (the postcode);
    a line after that (a name under the address) is not part of it."""
    if not text.startswith("\n", end):
        return end
    lines = text[end + 1 :].split("\n", 3)[:3]
    reach, position = end, end + 1
    for line in lines:
        if len(line) > 40:
            break
        position += len(line)
        if re.search(r"\d", line):
            reach = position
        position += 1
    return reach


_REGION_STOP = re.compile(
    r"\n|;|[.!?](?:$|\s+(?=[A-Z][a-z]*\s+[a-z]))|"
    # after a word, or a postcode ("… VIC 3011. Brother Majok …"), a capital starts a sentence
    r"(?:(?<=[a-z]{3})|(?<=\b\d{4}))[.!?]\s+(?=[A-Z])"
)


def _region_end(text: str, start: int) -> int:
    """The end of the line, or of the sentence (a period followed by a new sentence, not the one
    after "Apt." or "u. 97." inside an address), at most 120 characters on."""
    stop = _REGION_STOP.search(text, start, start + 120)
    return stop.start() if stop else min(len(text), start + 120)


#: Abbreviations of this business's services and roles, never part of a person's name.
_SERVICE_WORDS = frozenset(
    # services, and the banks and health funds a participant's paperwork names
    ("sil", "sda", "ndis", "ndia", "gp", "ot", "lac", "rn", "pt", "ssc", "headspace", "westpac",
     "commbank", "suncorp", "medibank", "anz", "nab")
)  # fmt: skip
_TITLE_BEFORE = re.compile(r"\b(?:mr|mrs|ms|miss|mx|dr|(?-i:RN|EN|NP|CN|RM))\.?\s+$", re.IGNORECASE)


def titled(text: str, start: int) -> bool:
    """A title just before ``start`` ("Mrs ", "Dr. ", "RN ")."""
    return _TITLE_BEFORE.search(text, max(0, start - 6), start) is not None


def not_a_name(text: str, start: int, end: int, regions: list[tuple[int, int]]) -> bool:
    """A PERSON span that is a label, title, pronoun or job title; part of a firm's name
    ("Hawkins, Richardson and Santana", "the Davis, Reynolds and Williamson Orchestra"); or
    inside an address."""
    # judged by its first line: the model's span may run over one ("Tavita Leaupepe\nCommunity")
    span = text[start:end].strip(" .,:\n").split("\n")[0]
    if span.lower() in _NOT_NAMES or span.lower() in _NOT_NAME_PHRASES:
        return True
    if _SERVICE_WORDS.intersection(span.lower().split()):
        return True  # "Quakers Hill SIL", "His GP": a service, not a person
    if _FIRM_AFTER.match(span.split()[-1] if span.split() else ""):
        return True  # "Rand Corporation", "Williamson Orchestra"
    if "\n" not in text[start:end] and _FIRM_NEXT.match(text, end):
        return True  # "Brightpath" in "Brightpath Supports"
    if len(span.split()) == 1 and _FIRM_IS.match(text, end):
        return True  # "Coden is a design agency" (but "Mary Chen is an app developer")
    if len(span.split()) > 1 and _PLACE_AFTER.match(span.split()[-1]) and not titled(text, start):
        return True  # "Harris Park", "Leichhardt Marketplace"; not "Mrs Soo-ah Park"
    if len(span.split()) == 1 and not re.match(r"['’]s\b", text[end : end + 3]):
        before = text[max(0, start - 12) : start]
        if _IN_PLACE.search(before) or _PLACE_NOUN.match(text, end):
            return True  # "in Footscray", "the Wollongong office": a place
        if span.lower() in _WORD_NAMES and _AS_WORD.match(text, end):
            return True  # "Bill payments", "Grace periods", "Mark it as urgent": words
    for firm in _FIRM_LIST.finditer(text, max(0, start - 80), min(len(text), end + 80)):
        inside = firm.start() <= start and end <= firm.end()
        if inside and (
            _FIRM_AFTER.match(text[firm.end() : firm.end() + 60])
            or _FIRM_BEFORE.search(text[max(0, firm.start() - 12) : firm.start()])
        ):
            return True
    return any(a <= start < b for a, b in regions)


#: Digits named as another identifier just before them are not a phone number.
_NOT_A_PHONE = re.compile(
    r"(?:licen[cs]e|passport|account|policy|member|customer|invoice|order|reference|ref)"
    r"(?:\s+(?:number|no\.?|#|id))?(?:\s+is)?\s*[:#]?\s*$",
    re.I,
)
#: …nor are digits before a street name (a house number).
_STREET_AFTER = re.compile(
    r"^\s+[A-Z][\w'-]+\s+(?:Street|St|Avenue|Ave|Road|Rd|Lane|Ln|Drive|Dr|Boulevard|Blvd|"
    r"Way|Court|Ct|Place|Pl|Terrace|Parade|Crescent|Highway|Hwy|Square)\b"
)


def not_a_phone(text: str, start: int, end: int) -> bool:
    return bool(
        _NOT_A_PHONE.search(text[max(0, start - 40) : start])
        or _STREET_AFTER.match(text[end : end + 40])
    )
