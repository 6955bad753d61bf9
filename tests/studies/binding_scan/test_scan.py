"""The binding_scan and depth studies read one SCAN: the kit's ``scan`` (:mod:`bindscale.train.scan`) and its
sequence-task helpers (:mod:`bindscale.train.seqdata`), not copies of their own. The grammar's 20,910 commands
and the official splits are checked in ``tests/studies/depth/test_scan.py``."""

import pytest

import bindscale.train.scan
import bindscale.train.seqdata
from bindscale.kit import scan
from bindscale.studies.binding_scan import config as binding_config
from bindscale.studies.binding_scan import trial as binding_trial
from bindscale.studies.depth import config as depth_config
from bindscale.studies.depth import trial as depth_trial


def test_both_studies_read_the_one_shared_scan_module():
    assert scan is bindscale.train.scan
    assert binding_trial.scan is depth_trial.scan is scan
    for name in ("scan_data", "pack_pairs", "scan_result", "ScanData"):
        assert getattr(binding_trial, name) is getattr(depth_trial, name) is getattr(bindscale.train.seqdata, name)


def test_both_task_sections_are_the_shared_one():
    binding_task = binding_config.BindingTrial.model_fields["task"].annotation
    assert issubclass(binding_task, scan.ScanTaskConfig)
    assert depth_config.DepthTrial.model_fields["task"].annotation is scan.ScanTaskConfig
    assert set(binding_task.model_fields) == set(scan.ScanTaskConfig.model_fields)
    assert set(binding_task.model_fields["split"].annotation.__args__) == set(scan.SPLITS)


@pytest.mark.parametrize("split", ["addprim_jump", "around_right"])
def test_a_binding_trial_draws_the_data_a_depth_trial_does(split):
    task = {"split": split, "n_test": 50, "n_id": 20}
    b = binding_trial.make_data(binding_config.BindingTrial(task=task))
    d = depth_trial.make_data(depth_config.DepthTrial(task=task))
    assert (b.train, b.id_check, b.test, b.vocab.itos, b.max_len) == (d.train, d.id_check, d.test, d.vocab.itos,
                                                                        d.max_len)
