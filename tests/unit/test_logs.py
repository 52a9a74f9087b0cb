import json
import logging

from memhub.logs import JsonFormatter, RedactingFilter, redact


def test_query_tokens_bearer_tokens_and_raw_tokens_are_redacted():
    text = (
        "GET /mcp?token=mh_abcdefghijklmnop&x=1 "
        "Authorization: Bearer sekrit.value mh_zzzzzzzzzzzz"
    )
    out = redact(text)
    assert "abcdefghijklmnop" not in out
    assert "sekrit.value" not in out
    assert "zzzzzzzzzzzz" not in out
    assert "x=1" in out


def test_a_log_record_is_one_json_line_with_secrets_masked():
    record = logging.makeLogRecord(
        {"msg": "path %s", "args": ("/mcp?token=mh_secretsecretsecret",), "levelname": "INFO"}
    )
    RedactingFilter().filter(record)
    line = JsonFormatter().format(record)
    assert "secretsecret" not in line
    assert json.loads(line)["msg"] == "path /mcp?token=[REDACTED]"
