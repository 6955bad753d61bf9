import io

from rich.console import Console

from bindscale.progress import TrainingProgress


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
    assert lines[0].startswith("training (2/4 trials, 1 not ok): 50% of 400 trial-steps") and "ETA" in lines[0]
    assert lines[1].startswith("training (4/4 trials, 1 not ok): 100% of 400 trial-steps") and "ETA" not in lines[1]


def test_off_a_terminal_long_jobs_still_print_every_interval():
    con, buf = plain_console()
    with TrainingProgress(con, total=1000, n_trials=1, every=0.0) as p:
        p.advance(250)
        p.advance(-50)  # a re-run job's steps taken back
    assert [ln.split(":")[1].split(" of")[0].strip() for ln in buf.getvalue().splitlines()] == ["25%", "20%"]


def test_on_a_terminal_a_live_bar_is_used():
    buf = io.StringIO()
    con = Console(file=buf, force_terminal=True, width=120)
    with TrainingProgress(con, total=10, n_trials=1) as p:
        p.advance(10)
        p.job_done(["ok"])
    assert "training (1/1 trials)" in buf.getvalue() and "10/10" in buf.getvalue()
