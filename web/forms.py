"""Reading the operator's forms: bounded fields, and the choice of scope that the dashboard's
create form and the OAuth consent form share."""

from __future__ import annotations

from starlette.requests import Request

from ..errors import InvalidInput

MAX_FORM_FIELD_CHARS = 2000


async def read_form(request: Request) -> dict[str, str]:
    """The form's text fields, each cut at MAX_FORM_FIELD_CHARS; a repeated field's values
    joined with commas; files ignored."""
    form = await request.form(max_files=0, max_fields=50)
    out: dict[str, str] = {}
    for key, value in form.multi_items():
        if isinstance(value, str):
            if key in out:
                out[key] = out[key] + "," + value
            else:
                out[key] = value[:MAX_FORM_FIELD_CHARS]
    return out


def namespaces_chosen(form: dict[str, str]) -> list[str] | None:
    """The scope the create or consent form chose: None only when "every namespace" was
    chosen. A blank field with "these namespaces" (the default, also when `scope` is missing)
    is an empty list, which the store refuses: a forgotten field never becomes "all"."""
    names = form.get("namespaces", "").replace(",", " ").split()
    if form.get("scope") == "all":
        if names:
            raise InvalidInput("choose either 'every namespace' or a namespace list, not both",
                               field="namespaces")
        return None
    return names
