"""An admin change page's form as a browser would submit it (the values shown)."""

from __future__ import annotations

from html.parser import HTMLParser


class _FormValues(HTMLParser):
    """What a browser would submit from a page's form: inputs, textareas, selected options."""

    def __init__(self) -> None:
        super().__init__()
        self.values: dict[str, str] = {}
        self._textarea: str | None = None
        self._select: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        name = a.get("name", "")
        if tag == "input" and name and a.get("type") not in ("submit", "button", "file"):
            if a.get("type") != "checkbox":
                self.values[name] = a.get("value", "")
            elif "checked" in a:
                self.values[name] = a.get("value", "on")
        elif tag == "textarea":
            self._textarea, self.values[name] = name, ""
        elif tag == "select":
            self._select = name
        elif tag == "option" and self._select and "selected" in a:
            self.values[self._select] = a.get("value", "")

    def handle_endtag(self, tag: str) -> None:
        if tag == "textarea":
            self._textarea = None
        elif tag == "select":
            self._select = None

    def handle_data(self, data: str) -> None:
        if self._textarea:
            self.values[self._textarea] += data


def page_form(page: str) -> dict[str, str]:
    parser = _FormValues()
    parser.feed(page)
    values = parser.values
    for name, value in values.items():  # the browser drops the newline after <textarea>
        values[name] = value[1:] if value.startswith("\n") else value
    values.pop("csrfmiddlewaretoken", None)
    return values
