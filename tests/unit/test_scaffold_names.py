"""`bindscale new-study` refuses names that would clash and a --dir that is a file, in one line."""

import pytest

from bindscale.core.errors import ConfigError
from bindscale.core.scaffold import new_study


@pytest.mark.parametrize("name,words", [("all", "every built-in study"), ("scaling", "already registered"),
                                        ("depth_full", None), ("torch", "installed Python package"),
                                        ("bindscale", "installed Python package"), ("Bad-Name", "identifier")])
def test_clashing_names_are_refused(tmp_path, name, words):
    if words is None:  # a free name is accepted
        package, test_file = new_study(name, tmp_path)
        assert (package / "README.md").read_text().startswith(f"# The `{name}` study") and test_file.exists()
        return
    with pytest.raises(ConfigError, match=words):
        new_study(name, tmp_path)
    assert not (tmp_path / name).exists()


def test_a_dir_that_is_a_file_is_refused(tmp_path):
    (tmp_path / "afile.txt").write_text("x")
    with pytest.raises(ConfigError, match="is a file, not a folder"):
        new_study("my_study", tmp_path / "afile.txt")
