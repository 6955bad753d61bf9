"""The verdict summary `bindscale run` / `report` print at the end."""

from bindscale.cli import _print_summary


def verdict(claim, lo, hi, outcome="supported"):
    return {"claim": claim, "verdict": outcome, "statistic": "s", "value": lo, "ci_low": lo, "ci_high": hi,
            "n_trials": 9}


def test_failed_diverged_and_zero_width_intervals_are_pointed_out(capsys):
    summary = {"study": "x", "n_trials": 10, "n_failed": 2, "n_diverged": 1,
               "verdicts": [verdict("binding", 14.6, 14.6), verdict("scaling", 0.9, 0.95),
                            verdict("hull", 0.5, 0.5, "inconclusive")]}  # one seed left: its reason says so
    _print_summary(summary, "/tmp/nowhere")
    out = capsys.readouterr().out
    assert "2 of 10 trials failed" in out and "re-run the same command to retry them" in out
    assert "1 of 10 trials diverged" in out
    assert "note: binding's interval has zero width" in out
    assert "scaling's interval" not in out and "hull's interval" not in out


def test_a_clean_run_prints_no_warnings(capsys):
    _print_summary({"study": "x", "n_trials": 3, "n_failed": 0, "n_diverged": 0,
                    "verdicts": [verdict("scaling", 0.9, 0.95)]}, "/tmp/nowhere")
    out = capsys.readouterr().out
    assert "failed" not in out and "diverged" not in out and "note:" not in out


def test_a_study_without_verdicts_says_so_instead_of_an_empty_table(capsys):
    _print_summary({"study": "x", "n_trials": 3, "verdicts": []}, "/tmp/nowhere")
    out = capsys.readouterr().out
    assert "x: no verdicts (the study configures none)" in out and "claim" not in out


def test_the_first_failed_trials_error_is_printed(capsys, tmp_path):
    """A failure's cause shows in the terminal (its first line), not only in the report."""
    from bindscale.store.records import REQUIRED, write_record

    base = dict.fromkeys(REQUIRED)

    for tid, err in (("b", "ValueError: second\nTraceback ..."), ("a", "EndpointError: http://127.0.0.1:9/v1: "
                                                                       "cannot connect\nTraceback (most recent)")):
        write_record(tmp_path, {**base, "trial_id": tid, "study": "x", "status": "failed", "error": err})
    write_record(tmp_path, {**base, "trial_id": "0", "study": "x", "status": "ok", "error": None})
    _print_summary({"study": "x", "n_trials": 3, "n_failed": 2, "verdicts": []}, str(tmp_path))
    out = capsys.readouterr().out
    assert "first error: EndpointError: http://127.0.0.1:9/v1: cannot connect" in out
    assert "Traceback" not in out and "second" not in out


def test_an_unfinished_run_says_so_before_its_verdicts(capsys):
    """Missing trials are said above the verdict table, not only on the last line, where they were missed."""
    _print_summary({"study": "x", "n_trials": 127, "n_planned": 160, "n_missing": 33, "n_failed": 0,
                    "verdicts": [verdict("scaling", 0.9, 0.95)]}, "/tmp/nowhere")
    out = capsys.readouterr().out
    first = out.index("unfinished run: 33 of 160 planned trials have no record yet")
    assert first < out.index("verdicts") and first < out.index("scaling")
    # and again at the end, with the command that finishes them (not "re-run", after `bindscale report`)
    assert "33 of 160 trials have no record yet; to finish them, run it with `bindscale run /tmp/nowhere/study.yaml " \
           "--out /tmp/nowhere`" in out
    _print_summary({"study": "x", "n_trials": 3, "n_planned": 3, "n_missing": 0,
                    "verdicts": [verdict("scaling", 0.9, 0.95)]}, "/tmp/nowhere")
    assert "unfinished" not in capsys.readouterr().out
