"""The Guardian's patterns for instructions in other languages: Spanish, Vietnamese, Chinese,
Indonesian and Tagalog; and, for the commonest requests (ignore the instructions, tell nobody,
approve everything, send to an address, show the prompt), Arabic, Hindi, Korean, Greek, Turkish,
Italian and Japanese.

Written as ``patterns.py`` describes: Spanish and Vietnamese over the compact view (the folded
text has lost their diacritics, and "đ" reads "d"), Chinese as ``re:`` expressions over the
folded text (its characters are kept as written).
"""

from __future__ import annotations

import re

# --- instructions in Spanish, Vietnamese and Chinese (Vietnamese and Spanish are matched without
# their diacritics, as the folded text has them; Chinese as written, over the folded text).
LANGUAGE_PATTERNS: list[tuple[str, str, str]] = [
    (
        "ignore_instructions_es",
        "instruction_override",
        "(olvida|olvidate|omite|ignora|descarta|desobedece)_(de)?_(tus|las|todas|sus|los)?_"
        "(instrucciones|reglas|indicaciones|normas|directrices)",
    ),
    (
        "ignore_instructions_vi",
        "instruction_override",
        "(boqua|quen|quendi|khongtuantheo|bachbo)~(huongdan|quytac|chidan|nguyentac)",
    ),
    (
        "ignore_instructions_id",
        "instruction_override",
        "(abaikan|lupakan|acuhkan|balewalain|huwagpansinin)~(instruksi|petunjuk|aturan|prosedur|"
        "perintah|tagubilin|patakaran)",
    ),
    (
        "ignore_instructions_zh",
        "instruction_override",
        r"re:(?:忽略|无视|忽视|不要理会|不用理会|别管|不用遵守|不要遵守|不必遵守)[^。\n]{0,12}?"
        r"(?:指示|指令|规则|规定|说明|提示|要求)",
    ),
    (
        "unrestricted_persona_other",
        "instruction_override",
        "(eres|actuacomo|sercomo|banla|banlamot)~(sinrestricciones|sinlimites|sinreglas|"
        "khongcogioihan|khonggioihan|khongcorangbuoc)",
    ),
    (
        "unrestricted_persona_zh",
        "instruction_override",
        r"re:(?:扮演|你现在是|你是|作为)[^。\n]{0,12}?(?:没有任何限制|不受限制|无限制|没有限制|"
        r"管理员|超级用户)",
    ),
    (
        "reveal_prompt_other",
        "prompt_leakage",
        "(muestra|muestrame|dime|revela|revelame|ensename|imprime|tietlo|chotoixem|hienthi|inra)~"
        "(mensajedelsistema|instruccionesdelsistema|promptdelsistema|indicacionesdelsistema|"
        "instruccionesiniciales|loinhachethong|nhachethong|huongdanhethong|contrasena|matkhau)",
    ),
    (
        "reveal_prompt_zh",
        "prompt_leakage",
        r"re:(?:告诉|显示|输出|透露|泄露|给我看|打印|说出)[^。\n]{0,10}?(?:系统提示|提示词|系统指令|"
        r"初始指令|密码|口令)",
    ),
    (
        "send_records_other",
        "exfiltration",
        "(envia|enviar|manda|mandar|reenvia|gui|chuyen)~(registros|expedientes|datos|lista|"
        "danhsach|hoso|dulieu|toanbo|tatca)~(micorreo|correopersonal|miemail|chotoi|emailcuatoi|"
        "email)",
    ),
    (
        "send_records_zh",
        "exfiltration",
        r"re:(?:所有|全部)[^。\n]{0,14}?(?:资料|数据|记录|电话号码|电话|地址|信息|档案)[^。\n]{0,14}?"
        r"(?:发给|发到|发送|转发|寄给)|(?:发给|发到|发送到|转发到)[^。\n]{0,6}?(?:私人|个人)(?:邮箱|邮件)",
    ),
    (
        "bank_change_other",
        "fraud",
        "(cambia|actualiza|modifica|thaydoi|capnhat|doi)~(datosbancarios|cuentabancaria|"
        "sotaikhoan|taikhoannganhang)",
    ),
    (
        "bank_change_zh",
        "fraud",
        r"re:(?:更改|修改|改为|换成|变更|更新)[^。\n]{0,10}?银行(?:账号|账户|帐户|帐号)|"
        r"银行(?:账号|账户|帐户|帐号)[^。\n]{0,6}?(?:更改|改为|换成|变更)",
    ),
    (
        "skip_approval_other",
        "tool_abuse",
        "(sin|khongcan|boqua)_(esperar)?_(la|el|nguoi)?(aprobacion|revision|pheduyet|duyet|"
        "kiemtra|xetduyet)|(aprueba|autoriza|pheduyet)_(todas|todos|moi|tatca|toanbo)|"
        "(tanpa|lewati|abaikan)_(prosedur)?_(persetujuan|pemeriksaan|tinjauan|verifikasi)|"
        "(setujui|sahkan)_(semua|seluruh)",
    ),
    (
        "skip_approval_zh",
        "tool_abuse",
        r"re:(?:跳过|绕过|不经|无需|不需要|不用)[^。\n]{0,4}?(?:审批|审核|批准|复核)|"
        r"批准(?:所有|全部)",
    ),
    (
        "conceal_other",
        "concealment",
        "(nolodigas|noselodigas|nolemenciones|nodigasnada|dungnoi|khongnoi|dungbao)~"
        "(coordinador|nadie|gerente|supervisor|finanzas|dieuphoi|quanly|aica|ketoan)|"
        "(jangan|tidakperlu|tidakusah)(beritahu|bilang|kasihtahu|laporkan|memberitahu|kabari)~"
        "(koordinator|manajer|atasan|siapapun|siapasiapa|keuangan|supervisor)",
    ),
    (
        "conceal_zh",
        "concealment",
        r"re:(?:不要|别|不用)(?:告诉|通知)(?:任何人|协调员|经理|主管|财务|别人)",
    ),
    (
        "erase_log_other",
        "destructive_command",
        "(borra|borrar|elimina|eliminar|xoa|dungghivao|khongghivao)~(registro|registros|historial|"
        "nhatky)|(jangancatat|janganmencatat|hapus|jangansimpan)~(log|catatan|audit)",
    ),
    (
        "erase_log_zh",
        "destructive_command",
        r"re:(?:删除|清除|清空|不要记录)[^。\n]{0,6}?(?:审计)?日志",
    ),
]


def _as_folded(pattern: str) -> str:
    """A pattern of literal words (no escapes) as the folded text has them: fold() reads Greek
    look-alikes as Latin letters, drops the marks Hindi and Arabic write above or below a letter
    and the Japanese voicing marks ("すべて" reads "すへて")."""
    from brainframe.safety.guardian.normalise import fold  # normalise does not import this

    return fold(pattern)


def _words(*words: str) -> str:
    """An alternation of ``words`` as the folded text has them (``_as_folded``), each folded the
    same way once, here; also as they read at the start of a sentence and in capitals (fold
    reads a capital Greek or Cyrillic letter as the Latin one it looks like, and not always its
    small letter: "Μην" folds to "mηn", "μην" to "μηn")."""
    forms = dict.fromkeys(
        _as_folded(form) for word in words for form in (word, word[:1].upper() + word[1:],
                                                         word.upper())
    )  # fmt: skip
    return "(?:" + "|".join(re.escape(form) for form in forms) + ")"


_IGNORE = _words(
    "تجاهل",
    "تجاهلي",
    "أهمل",
    "अनदेखा",
    "नज़रअंदाज़",
    "एक तरफ़ रख",
    "एक तरफ रख",
    "किनारे रख",
    "무시",
    "αγνόησε",
    "αγνοήστε",
    "unut",
    "yok say",
    "görmezden gel",
    "kalimutan",
    "huwag pansinin",
    "ignora",
    "ignorate",
    "dimentica",
    "zignoruj",
    "zignorujcie",
    "ignore",
)
_INSTRUCTIONS = _words(
    "التعليمات",
    "تعليمات",
    "الأوامر",
    "निर्देश",
    "निर्देशों",
    "नियम",
    "नियमों",
    "지침",
    "지시",
    "명령",
    "οδηγίες",
    "εντολές",
    "talimat",
    "talimatları",
    "tagubilin",
    "istruzioni",
    "regole",
    "instrukcje",
    "polecenia",
    "kurallarını",
    "kuralları",
    "instruções",
)
_DONT_TELL = _words(
    "لا تخبر",
    "لا تبلغ",
    "لا تُعلم",
    "मत बताना",
    "मत बताओ",
    "न बताएं",
    "बताने की ज़रूरत नहीं",
    "बताने की जरूरत नहीं",
    "알리지 마",
    "말하지 마",
    "μην ενημερώσεις",
    "μην πεις",
    "μην καταγράψεις",
    "μην αναφέρεις",
    "μην την αναφέρεις",
    "μην το αναφέρεις",
    "μην καταγράψετε",
    "μην το καταγράψετε",
    "μην ενημερώσετε",
    "μην αναφέρετε",
    "기록하지 마",
    "दर्ज मत करना",
    "दर्ज मत करो",
    "haber verme",
    "söyleme",
    "bildirme",
    "huwag mo nang sabihan",
    "huwag sabihin",
    "huwag ipaalam",
    "不要通知",
    "不要告訴",
    "別告訴",
    "別通知",
    "no se lo menciones",
    "no lo menciones",
    "no le digas",
    "non dirlo",
    "non informare",
    "non dire niente",
    "non registrare",
    "non annotare",
    "no lo registres",
    "no lo anotes",
    "no lo reportes",
    "non serve avvisare",
    "jangan beritahu",
    "jangan kasih tahu",
    "nie informuj",
    "nie mów",
    "không ghi lại",
    "đừng ghi lại",
)
_APPROVE_ALL = _words(
    "وافق",
    "وافقي",
    "मंजूर",
    "स्वीकृत",
    "승인",
    "έγκρινε",
    "εγκρίνετε",
    "onayla",
    "aprubahan",
    "aprueba",
    "approva",
    "setujui",
    "批准",
    "核准",
    "zatwierdź",
    "wszystkie",
    "wszystkich",
)
_ALL = _words(
    "كل",
    "جميع",
    "सभी",
    "सारे",
    "모두",
    "모든",
    "όλα",
    "όλες",
    "όλους",
    "tüm",
    "bütün",
    "lahat",
    "todas",
    "todos",
    "tutte",
    "tutti",
    "semua",
    "所有",
    "全部",
)
_SEND = _words(
    "أرسل",
    "ارسل",
    "إرسال",
    "ارسال",
    "ابعث",
    "भेज",
    "भेजो",
    "보내",
    "στείλε",
    "στείλτε",
    "προωθήστε",
    "προώθησε",
    "gönder",
    "ipadala",
    "kirim",
    "envíe",
    "envía",
    "envia",
    "manda",
    "invia",
    "gửi",
    "发送",
    "發送",
    "寄給",
    "發給",
    "ilet",
    "chuyển tiếp",
    "wyślij",
    "prześlij",
    "envie",
    "encaminhe",
)
#: Verbs of sending in languages that put them after their object ("… x@y.com पर भेज दो").
_SEND_LAST = _words("भेज", "फॉरवर्ड", "ईमेल कर", "보내", "gönder", "ilet", "転送")
_NO_REVIEW = _words(
    "دون أي مراجعة",
    "بدون مراجعة",
    "دون مراجعة",
    "बिना समीक्षा",
    "검토 없이",
    "χωρίς έγκριση",
    "χωρίς έλεγχο",
    "onaysız",
    "onay beklemeden",
    "nang walang review",
    "no hace falta pedir permiso",
    "sin pedir permiso",
    "senza approvazione",
    "salta la revisione",
    "salta il controllo",
    "omite la revisión",
    "sáltate la revisión",
    "παράλειψε τον έλεγχο",
    "tidak perlu konfirmasi",
    "不經審核",
    "不經審批",
    "bez czekania na zatwierdzenie",
    "bez zatwierdzenia",
    "sem aprovação",
    "sem revisão",
)

LANGUAGE_PATTERNS += [
    (
        "ignore_instructions_more",
        "instruction_override",
        rf"re:{_IGNORE}[^.\n]{{0,40}}?{_INSTRUCTIONS}|{_INSTRUCTIONS}[^.\n]{{0,20}}?{_IGNORE}",
    ),
    ("conceal_more", "concealment", rf"re:{_DONT_TELL}"),
    (
        # Japanese: 指示を無視して (ignore the instructions), …に言わないで (don't tell …)
        "japanese_more",
        "instruction_override",
        "re:"
        + _as_folded(
            "(?:指示|ルール|規則|命令)(?:を|は)?(?:すべて|全部)?無視|(?:コーディネーター|上司|"
            "マネージャー|家族|経理|誰)(?:に|には|にも)(?:言わない|知らせない|伝えない|報告しない|"
            "言わなくて|知らせなくて|伝えなくて)|(?:ログ|記録)(?:に|にも)(?:残さない|書かない)"
        ),
    ),
    (
        "approve_all_more",
        "tool_abuse",
        rf"re:{_APPROVE_ALL}[^.\n]{{0,40}}?{_ALL}|{_ALL}[^.\n]{{0,40}}?{_APPROVE_ALL}|{_NO_REVIEW}",
    ),
    (
        "send_to_address_more",
        "exfiltration",
        rf"re:{_SEND}[^\n]{{0,160}}?[\w.+-]+@[\w-]+\.[\w.-]+|"
        rf"[\w.+-]+@[\w-]+\.[\w.-]+[^.।\n]{{0,48}}?{_SEND_LAST}",
    ),
    (
        "reveal_prompt_more",
        "prompt_leakage",
        r"re:(?:指令|指示|提示词|提示詞|系統提示|系统提示)[^。\n]{0,8}?原文|一字不差|"
        r"你的[^。\n]{0,10}?(?:设定|設定|规则|規則|配置|指令|提示词)[^。\n]{0,12}?"
        r"(?:原文|回复给我|回覆給我|发给我|告诉我|给我看)|"
        r"(?:시스템|처음에 받은)[^.\n]{0,12}?(?:지침|지시|프롬프트)[^.\n]{0,30}?"
        r"(?:보여|알려|출력|공개)|"
        # Portuguese, Spanish, Italian: the system's instructions copied or shown
        r"(?:copie|copia|mostre|muestra|mostra|revele|revela|rivela)[^.\n]{0,30}?"
        r"(?:instrucoes|instrucciones|istruzioni) (?:de|do|del|di|dello) sistema|"
        # Japanese: the system's (or the first) instructions shown, told or sent
        + _as_folded("(?:システム|最初|初め)[^。]{0,12}?(?:指示|プロンプト)[^。]{0,30}?")
        + "(?:見せ|教え|表示|出力|送)",
    ),
    (
        "bank_change_more",
        "fraud",
        "(ganti|ubah|perbarui|gantikan)~(rekening|nomorrekening|rekeninggaji)|"
        "(bankabilgileri|hesapnumarasi|ibannumarasi)~(degistir|guncelle)",
    ),
]
