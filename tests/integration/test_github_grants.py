"""The GitHub repositories a namespace may have its claims checked against are the operator's to
grant (memhub-admin github allow / deny / list, audited), and no tenant transaction can grant
itself one: memhub_app only reads the table, and its one writer refuses any transaction not
scoped to every namespace."""

from __future__ import annotations

import json

import psycopg
import pytest

from tests.integration.test_admin_cli import cli, ok_json


def grants(dsn: str) -> list[tuple[str, str]]:
    with psycopg.connect(dsn) as conn:
        return conn.execute("SELECT namespace, repo FROM github_repo_grants ORDER BY 1, 2"
                            ).fetchall()


def error_code(result) -> str:
    return json.loads(result.stdout.splitlines()[0])["error"]["code"]


def test_allow_list_and_deny_change_the_grants_and_are_audited(db_dsn):
    allowed = ok_json(cli(db_dsn, "github", "allow", "acme", "Acme/Billing", "--json"))
    again = ok_json(cli(db_dsn, "github", "allow", "acme", "acme/billing", "--json"))
    ok_json(cli(db_dsn, "github", "allow", "beta", "beta/api", "--json"))
    assert (allowed["repo"], allowed["changed"], again["changed"]) == ("acme/billing", True,
                                                                      False)
    listed = ok_json(cli(db_dsn, "github", "list", "acme", "--json"))
    assert [(g["namespace"], g["repo"]) for g in listed] == [("acme", "acme/billing")]
    assert listed[0]["granted_by"].startswith("cli:")
    denied = ok_json(cli(db_dsn, "github", "deny", "acme", "acme/billing", "--json"))
    assert denied["changed"] is True
    assert grants(db_dsn) == [("beta", "beta/api")]
    with psycopg.connect(db_dsn) as conn:
        audited = conn.execute("SELECT action, detail->>'namespace', detail->>'repo'"
                               " FROM admin_audit WHERE action LIKE 'github.%' ORDER BY id"
                               ).fetchall()
    assert audited[0] == ("github.allow", "acme", "acme/billing")
    assert audited[-1] == ("github.deny", "acme", "acme/billing")


@pytest.mark.parametrize(("namespace", "repo"), [
    ("acme", "x/.."), ("acme", "x/."), ("acme", "-x/y"), ("acme", "x"), ("Not A NS", "x/y"),
])
def test_a_bad_namespace_or_repository_is_refused_with_its_code(db_dsn, namespace, repo):
    result = cli(db_dsn, "github", "allow", "--json", "--", namespace, repo)
    assert result.returncode != 0
    assert error_code(result) == "INVALID_INPUT"
    assert grants(db_dsn) == []


def test_a_tenant_transaction_cannot_grant_itself_a_repository(db_dsn):
    with psycopg.connect(db_dsn, autocommit=True) as conn:
        conn.execute("SET ROLE memhub_app")
        for statement, params in [
            ("SELECT memhub_github_grant('acme', 'someone/private', true, 'tenant')", []),
            ("INSERT INTO github_repo_grants (namespace, repo, granted_by)"
             " VALUES ('acme', 'someone/private', 'tenant')", []),
        ]:
            with pytest.raises(psycopg.errors.InsufficientPrivilege), conn.transaction():
                conn.execute("SELECT set_config('memhub.namespaces', 'acme', true)")
                conn.execute(statement, params)
        conn.execute("RESET ROLE")
    assert grants(db_dsn) == []
