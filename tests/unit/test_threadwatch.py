"""ThreadWatch: a stack on several intra-op threads falls back to one where the machine turns busy."""

import pytest

from bindscale.train.threads import MIN_STEPS, ThreadWatch


class Machine:
    """A fake clock whose steps cost ``cost(threads, step)`` seconds; the watch sets ``threads``."""

    def __init__(self, cost, threads=2):
        self.cost, self.threads, self.now, self.switches = cost, threads, 0.0, []

    def set_threads(self, n):
        self.switches.append(n)
        self.threads = n

    def run(self, steps, window=0.25, pause_at=None):
        watch = ThreadWatch(2, self.set_threads, clock=lambda: self.now, window=window)
        for step in range(1, steps + 1):
            self.now += self.cost(self.threads, step)
            watch.step_done(step)
            if pause_at and step in pause_at:  # an evaluation: time outside the steps
                self.now += 5.0
                watch.restart()
        return watch


def test_a_steady_machine_never_switches():
    m = Machine(lambda n, s: 0.001 if n == 2 else 0.0016)
    w = m.run(5000)
    assert m.switches == [] and w.fell_back_at is None and w.current == 2


def test_a_collapse_of_the_second_thread_falls_back_to_one_for_good():
    # two threads 1 ms a step until step 1000, then 6 ms (a descheduled waiter); one thread 1.6 ms
    m = Machine(lambda n, s: (0.001 if s < 1000 else 0.006) if n == 2 else 0.0016)
    w = m.run(5000)
    assert m.switches == [1] and m.threads == 1
    # windows of 250 steps (0.25 s at 1 ms): the slow window ends by step ~1250, the one-thread window after it
    assert 1000 < w.fell_back_at <= 1000 + 3 * 250
    assert w.current == 1


def test_a_whole_machine_slowing_down_keeps_the_threads_and_stops_probing():
    # everything 3x slower from step 1000: one thread is still slower than two, so back to two, once
    m = Machine(lambda n, s: (0.001 if n == 2 else 0.0016) * (3 if s >= 1000 else 1))
    w = m.run(8000)
    assert m.switches == [1, 2] and w.fell_back_at is None and m.threads == 2


def test_a_wandering_machine_keeps_its_threads():
    # two-thread windows wander up to 1.8x (the quiet EPYC's 64 x 2 ran at 300-690 steps/s on two threads)
    m = Machine(lambda n, s: (0.001 * (1.8 if (s // 300) % 2 else 1.0)) if n == 2 else 0.0016)
    assert m.run(6000).fell_back_at is None and m.switches == []


def test_one_thread_must_be_clearly_faster_to_be_kept():
    # two threads collapse to 2.5 ms; one thread 2.4 ms: within GAIN, back to two threads
    m = Machine(lambda n, s: (0.001 if s < 1000 else 0.0025) if n == 2 else 0.0024)
    w = m.run(5000)
    assert w.fell_back_at is None and m.switches == [1, 2]


def test_time_outside_the_steps_is_not_counted():
    m = Machine(lambda n, s: 0.001 if n == 2 else 0.0016)
    w = m.run(3000, pause_at={400, 900, 1700})
    assert m.switches == [] and w.fell_back_at is None


def test_slow_first_steps_only_size_the_windows():
    # warm-up: the first steps cost 50 ms (allocations, the thread team's start)
    m = Machine(lambda n, s: (0.05 if s <= 2 else 0.001) if n == 2 else 0.0016)
    w = m.run(3000)
    assert m.switches == [] and w.fell_back_at is None


def test_slow_steps_get_windows_of_at_least_min_steps():
    # 0.4 s steps: windows of MIN_STEPS steps; a collapse at step 20 is still caught
    m = Machine(lambda n, s: (0.4 if s < 20 else 2.0) if n == 2 else 0.6)
    w = m.run(60)
    assert m.switches == [1] and 20 < w.fell_back_at <= 20 + 3 * MIN_STEPS


def test_one_thread_is_refused():
    with pytest.raises(ValueError, match="more than one thread"):
        ThreadWatch(1, lambda n: None)


def test_a_deep_collapse_is_caught_within_its_window():
    # two threads 1 ms a step, then 100 ms from the start of a window (spinning waiters on a busy machine:
    # 40-100x measured); one thread 1.6 ms
    lost = []  # seconds of steps at the collapsed speed

    def cost(n, s):
        if n == 2 and s >= 760:
            lost.append(0.1)
            return 0.1
        return 0.001 if n == 2 else 0.0016

    m = Machine(cost)
    w = m.run(3000)
    assert m.switches == [1] and w.fell_back_at is not None
    assert 0 < sum(lost) < 2.0  # not the 25 s of a whole 250-step window at 100 ms
