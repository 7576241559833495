"""Hosted mode (DEBUGGER_HOSTED=1): caps, refused local paths, the per-run time budget, and no remote code."""

import pytest
from streamlit.testing.v1 import AppTest

from conftest import ROOT, rendered
from diagnostics.config import limits
from diagnostics.keras import loading
from diagnostics.__main__ import main
from diagnostics.config.run import RunConfig
from diagnostics.core.errors import InputError
from diagnostics.config.training import SweepSettings
from diagnostics.core.context import RunContext
from diagnostics.walk.stages import hparams_stage, overfit_stage
from diagnostics.walk.runner import validate_epochs
from diagnostics.core.result import Status


@pytest.fixture
def hosted(monkeypatch):
    monkeypatch.setenv(limits.HOSTED_ENV, "1")
    return limits.hosted()


def test_off_by_default(monkeypatch):
    monkeypatch.delenv(limits.HOSTED_ENV, raising=False)
    assert limits.hosted() is None
    RunConfig(batch_size=1024, max_length=2048).validated()  # no hosted cap; the bounds every run has
    SweepSettings(rates=25, steps=500).validated()


def test_each_cap_reads_its_own_variable(hosted, monkeypatch):
    monkeypatch.setenv("DEBUGGER_MAX_BATCH_SIZE", "64")
    monkeypatch.setenv("DEBUGGER_RUN_BUDGET_S", "30.5")
    assert limits.hosted().max_batch_size == 64 and limits.hosted().run_budget_s == 30.5


def test_an_empty_variable_leaves_the_default_and_a_set_one_wins_over_a_shared_servers_file_limits(hosted, monkeypatch):
    monkeypatch.setenv("DEBUGGER_MAX_BATCH_SIZE", "")
    monkeypatch.setenv("DEBUGGER_FILE_MAX_ROWS", " 7 ")
    assert limits.hosted().max_batch_size == 32
    shared, own = limits.file_limits(shared=True), limits.file_limits(shared=False)
    assert shared.max_rows == own.max_rows == 7
    assert shared.max_columns == 50  # hosted mode: a shared server's limits, the environment's where it sets one
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="frozen"):
        shared.max_rows = 8  # the limits read are frozen


def test_docs_hosting_lists_every_variable_hosted_mode_reads_with_its_default():
    import re

    table = (ROOT / "docs" / "hosting.md").read_text()
    rows = dict(re.findall(r"^\| `(DEBUGGER_[A-Z0-9_]+)` \| ([^|]+) \|", table, re.M))
    for name, field in limits.Limits.model_fields.items():
        assert f"{float(rows[f'DEBUGGER_{name.upper()}']):g}" == f"{float(field.default):g}", name


@pytest.mark.parametrize("variable, value, says", [
    ("DEBUGGER_MAX_BATCH_SIZE", "32.5", "must be a whole number, zero or more, not '32.5'"),
    ("DEBUGGER_MAX_BATCH_SIZE", "abc", "must be a whole number, zero or more, not 'abc'"),
    ("DEBUGGER_RUN_BUDGET_S", "-1", "must be a number, zero or more, not '-1'"),
    ("DEBUGGER_MAX_TRAINING_GIB", "nan", "must be a number, zero or more, not 'nan'"),
    ("DEBUGGER_FILE_MAX_ROWS", "1e99999", "must be a whole number, zero or more, not '1e99999'"),
    ("DEBUGGER_PROXY_HOPS", "1.5", "must be a whole number, zero or more, not '1.5'"),
    ("DEBUGGER_RUN_BUDGET_S", "inf", "must be a number, zero or more, not 'inf'"),
])
def test_a_limit_the_environment_sets_wrong_is_one_line_naming_it_on_the_command_line_and_the_page(
        hosted, monkeypatch, capsys, variable, value, says):
    monkeypatch.setenv(variable, value)
    assert main(["run", "--stages", "data"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"error: The environment variable {variable} {says}.", err
    app = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120).run()
    assert not app.exception and [rendered(box.value) for box in app.error] == [
        f"The environment variable {variable} {says}."]


@pytest.mark.parametrize("overrides, message", [
    ({"batch_size": 33}, "hosted mode caps the batch size at 32 (got 33)"),
    ({"max_length": 512}, "hosted mode caps max length at 256 (got 512)"),
    ({"checkpoint": "/models/bert"}, "hosted mode refuses local checkpoint paths ('/models/bert')"),
    ({"checkpoint": "~/bert"}, "hosted mode refuses local checkpoint paths"),
    ({"data_source": "files", "data_files": (("train", "/etc/passwd"),)}, "hosted mode refuses local data files"),
])
def test_configuration_beyond_the_caps_is_refused(hosted, overrides, message):
    with pytest.raises(InputError, match=message.replace("(", r"\(").replace(")", r"\)")):
        RunConfig(**overrides).validated()


def test_the_demo_kit_and_hub_names_are_allowed(hosted):
    RunConfig(checkpoint="demo").validated()
    RunConfig(checkpoint="distilbert-base-uncased", data_source="hub").validated()


@pytest.mark.parametrize("settings, message", [
    (SweepSettings(rates=10), "caps the sweep at 9 rates"),
    (SweepSettings(steps=21), "caps steps per rate at 20"),
    (SweepSettings(range_steps=101), "caps the range test at 100 steps"),
])
def test_sweeps_beyond_the_caps_are_refused(hosted, settings, message):
    with pytest.raises(InputError, match=message):
        settings.validated()


def test_overfit_epochs_beyond_the_cap_are_refused(hosted):
    assert validate_epochs(50) == 50
    with pytest.raises(InputError, match="hosted mode caps the overfit test at 50 epochs"):
        validate_epochs(51)


def test_checkpoint_beyond_the_parameter_cap_is_refused_before_and_after_loading(hosted, monkeypatch):
    monkeypatch.setenv("DEBUGGER_MAX_PARAMETERS", "100000")
    with pytest.raises(InputError, match="hosted mode caps checkpoints at"):
        loading.load_model("demo", 3)


def test_the_parameter_count_from_the_config_is_the_built_models(demo_model, bert_checkpoint):
    from transformers import TFAutoModelForSequenceClassification

    from diagnostics.keras.parameters import counted_parameters

    assert counted_parameters(demo_model.config) == demo_model.count_params()
    bert = TFAutoModelForSequenceClassification.from_pretrained(bert_checkpoint, num_labels=3)
    assert counted_parameters(bert.config, 3) == bert.count_params()


def test_a_config_that_sizes_a_weight_past_the_cap_is_refused_before_anything_is_built(hosted, tmp_path, monkeypatch):
    """A config whose usual fields are tiny and whose token-type table is huge (the estimate of the usual fields
    said 0.04M; building it made 51M parameters): counted from every field, it is refused, and nothing is built."""
    from transformers import BertConfig, TFAutoModelForSequenceClassification

    BertConfig(vocab_size=100, hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=16,
               max_position_embeddings=64, type_vocab_size=3_000_000).save_pretrained(tmp_path)
    monkeypatch.setenv("DEBUGGER_MAX_PARAMETERS", "1000000")
    built = []
    monkeypatch.setattr(TFAutoModelForSequenceClassification, "from_pretrained",
                        classmethod(lambda cls, *args, **kwargs: built.append(args)))
    with pytest.raises(InputError, match="has about 48M parameters; hosted mode caps checkpoints at 1M"):
        loading.load_model(str(tmp_path), 2)
    assert built == []


def test_an_architecture_the_count_does_not_know_is_refused_in_hosted_mode(hosted, tmp_path):
    from transformers import GPT2Config

    GPT2Config(n_embd=16, n_layer=1, n_head=2, vocab_size=100).save_pretrained(tmp_path)
    with pytest.raises(InputError, match="cannot count .* \\(model type 'gpt2'\\): it counts bert, roberta"):
        loading.load_model(str(tmp_path), 2)


def test_checkpoint_code_is_never_run(tmp_path):
    (tmp_path / "config.json").write_text(
        '{"model_type": "my-custom", "auto_map": {"AutoConfig": "configuration_my.MyConfig", '
        '"TFAutoModelForSequenceClassification": "modeling_my.TFMyModel"}}')
    for name in ("configuration_my.py", "modeling_my.py"):
        (tmp_path / name).write_text("raise SystemExit('checkpoint code ran')\n")
    for load in (loading.load_tokenizer, lambda checkpoint: loading.load_model(checkpoint, 2)):
        with pytest.raises(InputError, match="trust_remote_code stays off"):
            load(str(tmp_path))


def test_time_budget_stops_training_cleanly_with_a_skip(hosted, monkeypatch, demo_model, demo_inputs):
    monkeypatch.setenv("DEBUGGER_MAX_OVERFIT_EPOCHS", "1000")
    monkeypatch.setenv("DEBUGGER_RUN_BUDGET_S", "1")
    tokenizer, split = demo_inputs
    [result] = overfit_stage(RunContext(RunConfig(batch_size=8), tokenizer, split, lambda *a: demo_model), epochs=1000)
    assert result.status is Status.SKIP
    assert "time budget of 1 s at epoch" in result.summary and "of 1000 of the overfit test" in result.summary


def test_time_budget_spent_skips_every_later_check(hosted, monkeypatch, demo_model, demo_inputs):
    monkeypatch.setenv("DEBUGGER_RUN_BUDGET_S", "0")
    tokenizer, split = demo_inputs
    results = hparams_stage(RunContext(RunConfig(batch_size=8), tokenizer, split, lambda *a: demo_model),
                            sweep=SweepSettings(rates=2, steps=2, range_steps=5))
    assert {result.status for result in results} == {Status.SKIP}
    assert all("time budget of 0 s" in result.summary for result in results)


def test_budget_is_off_outside_hosted_mode(monkeypatch, demo_model, demo_inputs):
    monkeypatch.delenv(limits.HOSTED_ENV, raising=False)
    monkeypatch.setenv("DEBUGGER_RUN_BUDGET_S", "0")
    tokenizer, split = demo_inputs
    [result] = overfit_stage(RunContext(RunConfig(batch_size=8), tokenizer, split, lambda *a: demo_model), epochs=1)
    assert result.status is not Status.SKIP


def test_command_line_refuses_local_paths_with_exit_2(hosted, capsys, tmp_path):
    assert main(["run", "--checkpoint", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "hosted mode refuses local checkpoint paths" in err and len(err.strip().splitlines()) == 1


def test_page_in_hosted_mode_states_its_limits_and_offers_no_local_files(hosted):
    app = AppTest.from_file(str(ROOT / "app.py"), default_timeout=180).run()
    assert not app.exception
    assert "Hosted mode" in "\n".join(rendered(caption.value) for caption in app.sidebar.caption)
    assert app.radio(key="run.data_source").options == ["Bundled demo samples", "Hugging Face Hub (nyu-mll/glue)"]
    app.number_input(key="run.batch_size").set_value(64).run()
    assert "hosted mode caps the batch size at 32 (got 64)" in "\n".join(rendered(error.value) for error in app.error)
    app.text_input(key="run.checkpoint").set_value("/tmp").run()
    assert "refuses local checkpoint paths" in "\n".join(rendered(error.value) for error in app.error)
    assert app.number_input(key="run.batch_size").value == 64


def test_an_oversized_checkpoint_is_refused_from_its_config_before_its_tokenizer_is_fetched(hosted, monkeypatch,
                                                                                            tmp_path):
    from transformers import BertConfig

    BertConfig(vocab_size=30522, hidden_size=1024, num_hidden_layers=24, num_attention_heads=16,
               intermediate_size=4096).save_pretrained(tmp_path)  # a config alone: no tokenizer, no weights
    with pytest.raises(InputError, match=r"about 3\d\dM parameters; hosted mode caps checkpoints at 150M"):
        loading.load_tokenizer(str(tmp_path))


@pytest.mark.parametrize("make, layers, heads", [
    # ALBERT shares one set of weights over its layers: 4.9M parameters at 96 layers took 5,960 MiB.
    (lambda: __import__("transformers").AlbertConfig(hidden_size=768, num_attention_heads=12, intermediate_size=3072,
                                                     num_hidden_layers=96), 96, 12),
    # BERT-base's 109M parameters with 768 attention heads took 8,051 MiB.
    (lambda: __import__("transformers").BertConfig(num_attention_heads=768), 12, 768),
])
def test_a_checkpoint_under_the_parameter_cap_that_costs_more_to_train_is_refused_before_it_is_built(
        hosted, tmp_path, monkeypatch, make, layers, heads):
    from transformers import TFAutoModelForSequenceClassification

    make().save_pretrained(tmp_path)
    built = []
    monkeypatch.setattr(TFAutoModelForSequenceClassification, "from_pretrained",
                        classmethod(lambda cls, *args, **kwargs: built.append(args)))
    config = RunConfig(checkpoint=str(tmp_path), batch_size=32, max_length=256)
    with pytest.raises(InputError, match=rf"needs about \d+\.\d GiB \({layers} layers, {heads} attention heads\); "
                                         r"hosted mode caps a run at 10 GiB"):
        loading.refuse_costly(config)
    assert built == []
    monkeypatch.delenv(limits.HOSTED_ENV)
    loading.refuse_costly(config)  # a laptop is its owner's to fill: model.memory says whether it fits


def test_the_real_checkpoint_and_bert_base_at_hosted_modes_largest_batch_are_not_refused(hosted, tmp_path,
                                                                                         real_checkpoint):
    from transformers import BertConfig

    loading.refuse_costly(RunConfig(checkpoint=str(real_checkpoint), batch_size=32, max_length=256))
    BertConfig().save_pretrained(tmp_path)  # bert-base-uncased's shape, 9.2 GiB by the estimate
    loading.refuse_costly(RunConfig(checkpoint=str(tmp_path), batch_size=32, max_length=256))


def test_a_checkpoints_config_file_too_large_is_refused_before_it_is_parsed_and_the_refusal_remembered(
        hosted, tmp_path, monkeypatch):
    """A config.json of 121 MiB (three million labels) took a hosted server to 3,400 MiB and stalled every visitor
    for up to 36 s, parsed again at each request. Its size is read first, and the refusal said again at once."""
    import json

    from transformers import AutoConfig, BertConfig

    BertConfig(vocab_size=100, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
               intermediate_size=16).save_pretrained(tmp_path)
    config = json.loads((tmp_path / "config.json").read_text())
    config["id2label"] = {str(i): f"label {i}" for i in range(60_000)}  # 1.3 MB
    (tmp_path / "config.json").write_text(json.dumps(config))
    parsed, looked = [], []
    monkeypatch.setattr(AutoConfig, "from_pretrained", classmethod(lambda cls, *args, **kwargs: parsed.append(args)))
    sizes = loading._config_file_bytes
    monkeypatch.setattr(loading, "_config_file_bytes", lambda *args: looked.append(args) or sizes(*args))
    for _ in range(2):
        with pytest.raises(InputError, match=r"config\.json holds 1,\d{3},\d{3} bytes; hosted mode reads at most "
                                             r"1,048,576"):
            loading.load_tokenizer(str(tmp_path))
    assert parsed == [] and len(looked) == 1  # never parsed; the second refusal without a look


def test_a_tokenizer_file_too_large_is_refused_before_it_is_parsed_and_the_refusal_remembered(
        hosted, tmp_path, monkeypatch):
    """Eight checkpoints each with a 65 MiB tokenizer.json took a hosted server from 761 to 4,644 MiB: every file a
    tokenizer reads is sized first, and a checkpoint's tokenizer is weighed by its files' bytes for the cache."""
    import shutil

    from transformers import AutoTokenizer

    from diagnostics.keras.loading import demo_checkpoint_dir

    checkpoint = tmp_path / "large-tokenizer"
    shutil.copytree(demo_checkpoint_dir(), checkpoint)
    assert loading.load_tokenizer(str(checkpoint)) is not None  # its own files are small: loaded, and weighed
    assert 0 < loading.tokenizer_bytes(str(checkpoint)) < loading.MAX_TOKENIZER_FILE_BYTES
    with open(checkpoint / "tokenizer.json", "r+b") as file:
        file.truncate(65 << 20)  # 65 MiB, sparse: its size is what is read first
    loading._REFUSED.pop(str(checkpoint), None)
    loading.TOKENIZER_BYTES.pop(str(checkpoint), None)  # sized once a checkpoint: as a checkpoint not seen before
    parsed = []
    monkeypatch.setattr(AutoTokenizer, "from_pretrained", classmethod(lambda cls, *args, **kwargs: parsed.append(args)))
    for _ in range(2):
        with pytest.raises(InputError, match=r"tokenizer\.json holds 68,157,440 bytes; hosted mode reads at most "
                                             r"25,165,824 from a tokenizer's file"):
            loading.load_tokenizer(str(checkpoint))
    assert parsed == []


@pytest.mark.parametrize("named", ["/etc/hostname", "/no/such/file", "../../secrets/vocab.txt", "~/.netrc"])
def test_a_tokenizer_config_naming_a_file_outside_its_repository_is_refused_the_same_whether_it_exists(
        hosted, tmp_path, named):
    """A Hub tokenizer_config.json whose vocab_file named a path of the server was read in hosted mode (a line of
    that file appeared in the vocabulary), and existing and missing paths answered differently."""
    import json
    import shutil

    from diagnostics.keras.loading import demo_checkpoint_dir

    checkpoint = tmp_path / "crafted"
    shutil.copytree(demo_checkpoint_dir(), checkpoint)
    tokenizer_config = json.loads((checkpoint / "tokenizer_config.json").read_text())
    (checkpoint / "tokenizer_config.json").write_text(json.dumps({**tokenizer_config, "vocab_file": named}))
    with pytest.raises(InputError) as refused:
        loading.load_tokenizer(str(checkpoint))
    assert str(refused.value) == f"{str(checkpoint)!r}'s tokenizer_config.json names a file outside its repository " \
                                 "(vocab_file); hosted mode never reads one."


def test_the_training_estimate_counts_the_feed_forward_width_and_albert_inner_layers():
    """ALBERT with inner_group_num=8 (estimated 2.69 GiB) and BERT with intermediate_size=40000, 64M parameters
    (estimated 1.82 GiB) passed the limits and were killed at 5 GiB: the estimate read hidden size, layers and
    heads only. ALBERT applies each layer's inner layers in turn; a wide feed-forward keeps wide activations."""
    from transformers import AlbertConfig, BertConfig

    from diagnostics.keras.parameters import training_bytes

    def estimate(config, part=slice(None)) -> float:
        hidden, layers, heads, width = loading.config_size(config)
        parameters = loading.counted_parameters(config, 2) or 0
        return sum(training_bytes(parameters, hidden, layers, heads, 32, 256, intermediate=width)[part]) / 2**30

    shape = dict(hidden_size=768, num_attention_heads=12, intermediate_size=3072, embedding_size=128)
    assert loading.config_size(AlbertConfig(num_hidden_layers=12, inner_group_num=8, **shape))[1] == 96
    activations = slice(1, 2)  # ALBERT's 8 inner layers have weights of their own; what they keep is 96 layers'
    assert estimate(AlbertConfig(num_hidden_layers=12, inner_group_num=8, **shape), activations) == pytest.approx(
        estimate(AlbertConfig(num_hidden_layers=96, **shape), activations))
    wide = BertConfig(num_hidden_layers=1, intermediate_size=40_000, vocab_size=1000)
    assert 55e6 < loading.counted_parameters(wide, 2) < 70e6
    assert estimate(wide) > 3.5  # 1.7 GiB with the width of 4h: twice that, nearer the 5 GiB it took
    assert estimate(BertConfig()) == pytest.approx(estimate(BertConfig(intermediate_size=3072)))
