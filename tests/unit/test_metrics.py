"""The metrics' labels take only values fixed by the code (memhub/metrics.py), and a registry
belongs to one app."""

from __future__ import annotations

import pytest
from prometheus_client.parser import text_string_to_metric_families

from memhub.metrics import Metrics, code_label, route_label, status_label


def _samples(metrics: Metrics) -> dict[tuple[str, tuple], float]:
    text = metrics.render().decode()
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


@pytest.mark.parametrize(("path", "route"), [
    ("/mcp", "/mcp"), ("/mcp/", "/mcp"), ("/admin", "/admin"), ("/admin/tokens/7", "/admin"),
    ("/artifact/" + "ab" * 32, "/artifact"), ("/healthz", "/healthz"), ("/metrics", "/metrics"),
    ("/mcpx", "other"), ("/administrator", "other"), ("/acme-namespace", "other"), ("", "other"),
])
def test_every_path_folds_into_one_of_six_routes(path, route):
    assert route_label(path) == route


def test_a_code_outside_the_error_hierarchy_is_internal_and_a_status_outside_http_is_zero():
    assert code_label("NOT_FOUND") == "NOT_FOUND"
    assert code_label(None) == "OK"
    assert code_label("acme-secret") == "INTERNAL"
    assert (status_label(404), status_label(0), status_label(1200)) == ("404", "0", "0")


def test_a_refusal_reason_outside_the_list_is_refused():
    with pytest.raises(ValueError):
        Metrics().auth_refused("mh_looks_like_a_token")


def test_a_recorded_failure_counts_as_a_run_and_a_failure_and_leaves_the_last_success():
    metrics = Metrics()
    metrics.record_job_run("gc", True)
    metrics.record_job_run("gc", False)
    samples = _samples(metrics)
    assert samples[("memhub_job_runs_total", (("job", "gc"),))] == 2
    assert samples[("memhub_job_failures_total", (("job", "gc"),))] == 1
    assert samples[("memhub_job_last_success_timestamp_seconds", (("job", "gc"),))] > 0


def test_a_job_name_outside_the_list_is_refused_when_wired():
    with pytest.raises(ValueError):
        Metrics().job_recorder("nightly-namespace-acme")
    with pytest.raises(ValueError):
        Metrics().record_job_run("nightly-namespace-acme", True)


def test_two_apps_in_one_process_count_apart():
    first, second = Metrics(), Metrics()
    first.record_job_run("gc", True)
    assert _samples(first)[("memhub_job_runs_total", (("job", "gc"),))] == 1
    assert _samples(second)[("memhub_job_runs_total", (("job", "gc"),))] == 0
