import io

from rich.console import Console

from bindscale.run.progress import TrainingProgress


def plain_console() -> tuple[Console, io.StringIO]:
    buf = io.StringIO()
    return Console(file=buf, force_terminal=False, width=200), buf


def test_off_a_terminal_each_finished_job_prints_a_line_and_steps_are_rate_limited():
    con, buf = plain_console()
    with TrainingProgress(con, total=400, n_trials=4, every=3600) as p:
        p.advance(100)  # within `every`: no line
        assert buf.getvalue() == ""
        p.advance(100)
        p.job_done(["ok", "diverged"])
        p.advance(200)
        p.job_done(["ok", "ok"])
    lines = buf.getvalue().splitlines()
    assert len(lines) == 2
    assert lines[0].startswith("training (2/4 trials, 1 not ok): 50% done (200/400 trial-steps)") and "ETA" in lines[0]
    assert lines[1].startswith("training (4/4 trials, 1 not ok): 100% done (400/400 trial-steps)")
    assert "ETA" not in lines[1]


def test_off_a_terminal_long_jobs_still_print_every_interval():
    con, buf = plain_console()
    with TrainingProgress(con, total=1000, n_trials=1, every=0.0) as p:
        p.advance(250)
        p.advance(-50)  # a re-run job's steps taken back
    assert [ln.split(":")[1].split(" done")[0].strip() for ln in buf.getvalue().splitlines()] == ["25%", "20%"]


def test_on_a_terminal_a_live_bar_is_used():
    buf = io.StringIO()
    con = Console(file=buf, force_terminal=True, width=120)
    with TrainingProgress(con, total=10, n_trials=1) as p:
        p.advance(10)
        p.job_done(["ok"])
    assert "training (1/1 trials)" in buf.getvalue() and "10/10 trial-steps" in buf.getvalue()
    assert "100%" in buf.getvalue()


def test_fraction_done_and_eta_weigh_each_jobs_steps_by_their_cost(monkeypatch):
    import pytest

    import bindscale.run.progress as prog

    clock = [0.0]
    monkeypatch.setattr(prog.time, "monotonic", lambda: clock[0])
    con, buf = plain_console()
    # Job 0: 100 trial-steps costing 9 each (900); job 1: 300 costing 1 each (300): 1200 in all.
    with TrainingProgress(con, total=400, n_trials=2, every=0.0, job_costs=[(100, 9.0), (300, 1.0)]) as p:
        clock[0] = 10.0
        p.advance(10, job=0)  # first report (the ETA is measured from here): 90 of 1200
        clock[0] = 40.0
        p.advance(40, job=0)  # + 360 = 450 of 1200, 360 of them in 30 s
        p.advance(60, job=1)  # + 60 = 510
    _, first, second = buf.getvalue().splitlines()
    # By trial-steps, 50/400 = 12% and 40 steps in 30 s would give ETA 0:04:22; by work,
    # 450/1200 = 38% and 360 in 30 s, 750 left: ETA 0:01:02.
    assert first.startswith("training (0/2 trials): 38% done (50/400 trial-steps), 0:00:40 elapsed, ETA 0:01:02")
    assert second.startswith("training (0/2 trials): 42% done (110/400 trial-steps)")
    with pytest.raises(ValueError, match="positive and finite"):
        TrainingProgress(con, total=10, n_trials=1, job_costs=[(10, 0.0)])


def test_consoles_off_a_terminal_keep_a_log_line_whole(capsys):
    """rich's default 80 columns wrapped the plan and progress lines of a run driven from the Python API."""
    from bindscale.run.progress import LOG_WIDTH, console

    line = "scaling: 30 trials, 0 already recorded, 30 to run in 9 stacked jobs on 1 worker(s) (inline), device cpu → runs/q"
    assert 80 < len(line) <= LOG_WIDTH
    console(stderr=True).print(line)
    console().print(line)
    out = capsys.readouterr()
    assert out.err == line + "\n" and out.out == line + "\n"
