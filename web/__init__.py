"""The operator's browser, shared by every page under /admin: the dashboard (admin/) and the
OAuth consent pages (oauth/) both build on it, and it imports neither.

`sessions.py` (the signed session cookie), `csrf.py` (the two CSRF layers), `forms.py`
(bounded form reading), `pages.py` (security headers, templates, redirects, the error page) and
`operator.py` (the session a request carries, the checks every form post passes, the password
login with its throttling).
"""
