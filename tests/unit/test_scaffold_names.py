"""`bindscale new-study` refuses names that would clash and a --dir that is a file, in one line."""

from pathlib import Path

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


def _metadata(directory):
    """The packages, package data and entry points the ``pyproject.toml`` in ``directory`` declares."""
    import tomllib

    data = tomllib.loads((directory / "pyproject.toml").read_text())
    tool = data["tool"]["setuptools"]
    return tool["packages"], tool["package-data"], data["project"]["entry-points"]["bindscale.studies"]


def test_each_study_made_in_one_dir_is_added_to_the_metadata_the_first_wrote(tmp_path):
    """A second and a third study in the same --dir are declared beside the first (package, its study file,
    entry point), the first's declarations unchanged, and the printed plugin route finds each one there."""
    from bindscale.core.scaffold import how_to_register

    made = [new_study(name, tmp_path) for name in ("first_study", "second_study", "third_study")]
    packages, package_data, entry_points = _metadata(tmp_path)
    names = ["first_study", "second_study", "third_study"]
    assert packages == names
    assert package_data == {n: ["*.yaml"] for n in names}
    assert entry_points == {n: f"{n}:STUDY" for n in names}
    text = (tmp_path / "pyproject.toml").read_text()
    assert text.count('name = "bindscale-first_study"') == 1 and "[build-system]" in text
    for package, test_file in made:
        assert (package / f"{package.name}.yaml").exists() and test_file.exists()
        assert "(there already)" in how_to_register(package, test_file)


@pytest.mark.parametrize("left", ["package and test", "test only"])
def test_a_name_already_in_the_dir_is_refused_and_nothing_changes(tmp_path, left):
    """A study of the same name in the same --dir (its folder, or the test file it wrote) is refused in one line,
    and neither the first study nor the metadata is touched."""
    import shutil

    package, _ = new_study("first_study", tmp_path)
    if left == "test only":
        shutil.rmtree(package)
    before = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    with pytest.raises(ConfigError, match="already has a study named 'first_study'"):
        new_study("first_study", tmp_path)
    assert {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()} == before


def test_a_projects_own_pyproject_is_never_edited(tmp_path):
    """A ``pyproject.toml`` that new-study did not write is the user's: the study is made beside it, the file is
    left byte for byte (the printed steps say what to add)."""
    own = '[project]\nname = "mine"\nversion = "1"\n'
    (tmp_path / "pyproject.toml").write_text(own)
    new_study("first_study", tmp_path)
    assert (tmp_path / "pyproject.toml").read_text() == own


def test_metadata_new_study_cannot_extend_is_refused_before_anything_is_written(tmp_path):
    """Where the metadata of an earlier study no longer has the packages list new-study wrote (here: packages
    found by setuptools instead), the next study is refused with the lines to add by hand, and nothing is made."""
    new_study("first_study", tmp_path)
    project = tmp_path / "pyproject.toml"
    project.write_text(project.read_text().replace('packages = ["first_study"]', "packages = {find = {}}"))
    before = project.read_text()
    with pytest.raises(ConfigError, match="by hand"):
        new_study("second_study", tmp_path)
    assert project.read_text() == before
    assert not (tmp_path / "second_study").exists() and not (tmp_path / "test_second_study.py").exists()


@pytest.mark.parametrize("where", ["under_a_file", "system"])
def test_a_dir_that_cannot_be_created_is_refused_in_one_line(tmp_path, where):
    """`--dir afile/sub` (a parent that is a file) or a system folder raised a traceback (NotADirectoryError,
    PermissionError); now one ConfigError naming the folder."""

    if where == "under_a_file":
        (tmp_path / "afile").write_text("x")
        directory = tmp_path / "afile" / "sub"
    else:
        directory = Path("/proc/bindscale-cannot-be-here")
    with pytest.raises(ConfigError, match="cannot create"):
        new_study("zzstudy", directory)
