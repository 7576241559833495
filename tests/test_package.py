"""The package as a user installs it: the wheel built from pyproject.toml, installed into a fresh virtual
environment outside the clone, and its `diagnose()`, callback, tracer and console script run from another directory,
the demo kit's samples and scripts and the languages' catalogs read from the installed copy."""

import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.subprocess

ROOT = Path(__file__).resolve().parents[1]

# Run in the installed environment, from a directory that is not the clone.
NOTEBOOK = r'''
import importlib.resources, sys
import diagnostics
from diagnostics import DiagnoseCallback, diagnose
assert "site-packages" in diagnostics.__file__ and {root!r} not in diagnostics.__file__, diagnostics.__file__
import tf_keras
from datasets import load_dataset
from transformers import AutoTokenizer, DataCollatorWithPadding, TFAutoModelForSequenceClassification
from diagnostics.keras.loading import demo_checkpoint_dir

samples = importlib.resources.files("diagnostics") / "demo_data" / "sst2" / "train.jsonl"
assert "site-packages" in str(samples) and samples.is_file()
checkpoint = demo_checkpoint_dir()
tokenizer = AutoTokenizer.from_pretrained(checkpoint)
rows = load_dataset("json", data_files=str(samples), split="train").select(range(64))
rows = rows.map(lambda batch: tokenizer(batch["sentence"], truncation=True), batched=True)
data = rows.to_tf_dataset(columns=["input_ids", "attention_mask"], label_cols="label", batch_size=8, shuffle=True,
                          collate_fn=DataCollatorWithPadding(tokenizer, return_tensors="np"))
model = TFAutoModelForSequenceClassification.from_pretrained(checkpoint, num_labels=2)
model.compile(optimizer=tf_keras.optimizers.Adam(3e-3),
              loss=tf_keras.losses.SparseCategoricalCrossentropy(from_logits=True))
report = diagnose(model, data, tokenizer, task="sst2", stages="data,model", progress=False)
statuses = {{result.id: result.status.value for result in report.results}}
assert statuses["data.batch"] == "pass" and statuses["model.gradients"] == "pass", statuses
callback = DiagnoseCallback(tokenizer, task="sst2")
model.fit(data, epochs=1, steps_per_epoch=2, callbacks=[callback], verbose=0)
assert callback.report is not None and callback.report.results
print("NOTEBOOK OK", len(report.results), len(callback.report.results))
'''


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The wheel pip builds from the clone's sources, as `pip install .` would; built from a copy, since setuptools
    writes its build folders beside the sources."""
    out, source = tmp_path_factory.mktemp("dist"), tmp_path_factory.mktemp("source")
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    shutil.copytree(ROOT / "diagnostics", source / "diagnostics", ignore=shutil.ignore_patterns("__pycache__"))
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                            "-w", str(out), str(source)], capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stderr[-3000:]
    [found] = out.glob("training_pipeline_debugger-*.whl")
    return found


@pytest.fixture(scope="module")
def installed(wheel, tmp_path_factory) -> Path:
    """A fresh virtual environment holding the built wheel; its dependencies are this environment's (a .pth file
    puts them on its path), so no package is downloaded."""
    venv = tmp_path_factory.mktemp("package") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    Path(purelib, "dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    done = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "-q",
                           str(wheel)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return venv


def run_installed(venv: Path, args: list[str], cwd: Path, **kwargs) -> subprocess.CompletedProcess:
    env = {key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "TF_NUM_INTRAOP_THREADS")}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=600, **kwargs)


def test_the_wheel_holds_the_kit_the_scripts_and_every_language(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    metadata = zipfile.ZipFile(wheel).read(next(name for name in names if name.endswith("METADATA"))).decode()
    assert "diagnostics/demo_data/sst2/train.jsonl" in names
    assert "diagnostics/demo_data/scripts/course_script_fixed.py" in names
    for language in ("it", "ko", "ru", "zh"):
        assert f"diagnostics/i18n/locale/{language}/LC_MESSAGES/debugger.mo" in names
    assert not any(name.startswith(("tests/", "ui/", "app_pages/", "bench/")) for name in names)
    assert "Requires-Dist: transformers<5,>=4.44" in metadata or "Requires-Dist: transformers>=4.44,<5" in metadata
    assert "Provides-Extra: notebook" in metadata and "Provides-Extra: app" in metadata


def test_this_environment_satisfies_the_ranges_the_package_declares(installed):
    from importlib import metadata

    from packaging.requirements import Requirement

    python = installed / "bin" / "python"
    requires = run_installed(installed, [str(python), "-c", "from importlib import metadata; print('\\n'.join("
                                         "metadata.requires('training-pipeline-debugger')))"], ROOT.parent
                             ).stdout.splitlines()
    assert requires
    for line in requires:
        requirement = Requirement(line)
        if requirement.marker is not None and not requirement.marker.evaluate({"extra": ""}):
            continue
        assert requirement.specifier.contains(metadata.version(requirement.name), prereleases=True), line


def test_the_installed_copy_runs_diagnose_and_the_callback_from_another_directory(installed, tmp_path):
    done = run_installed(installed, [str(installed / "bin" / "python"), "-c", NOTEBOOK.format(root=str(ROOT))],
                         tmp_path)
    assert "NOTEBOOK OK" in done.stdout, done.stdout[-2000:] + done.stderr[-4000:]


@pytest.mark.slow  # full tier: a trace from the installed copy; the default tier runs diagnose() and the callback there
def test_the_console_script_runs_and_traces_in_korean_from_the_installed_copy(installed, tmp_path):
    console = str(installed / "bin" / "pipeline-debugger")
    done = run_installed(installed, [console, "run", "--task", "sst2", "--stages", "data", "--lang", "ko",
                                     "--json", "report.json"], tmp_path)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    assert "검사함" in done.stdout and (tmp_path / "report.json").is_file()
    script = run_installed(installed, [str(installed / "bin" / "python"), "-c", "import importlib.resources as r; "
                                       "print(r.files('diagnostics') / 'demo_data' / 'scripts' / "
                                       "'course_script_fixed.py')"], tmp_path).stdout.strip()
    assert "site-packages" in script
    done = run_installed(installed, [console, "trace", script, "--stages", "data", "--json", "trace.json"], tmp_path)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    assert (tmp_path / "trace.json").is_file() and "data.batch" in (tmp_path / "trace.json").read_text()
