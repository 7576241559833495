"""The matrix's checkpoints and scripts on disk: the demo kit's DistilBERT, a BERT of the same size and vocabulary
(for TFBertModel and its token_type_ids), each script in a folder of its own with the plan its runner reads."""

from __future__ import annotations

import json
from pathlib import Path
import subprocess
import sys

from tests.usercode.matrix.shapes import Shape, write_script

ROOT = Path(__file__).resolve().parents[3]
# The rates the healthy scripts train at, as a user picks one that works: the demo kit's own (config.run.
# DEMO_LEARNING_RATE); for the kit's BERT, 7e-4, where the sweep and the overfit test pass on every shape (measured
# with tests/usercode/matrix/run.py on its eight shapes: at 1e-3 a sigmoid head's held-out loss rises 22% in the
# sweep's 8 steps; at 5e-4 the overfit test's 20 epochs reach 88 to 94% of the batch).
KIT_RATE = 3e-3
KIT_BERT_RATE = 7e-4
# A Keras head of the user's own (Glorot-initialised, larger at the start than a Transformers head's 0.02 spread) on
# the kit's DistilBERT: at 3e-3 the overfit test's loss jumps 0.9 to 1.2 above its lowest point in the first epochs
# before it memorises the batch (an overshoot the test rightly calls unstable); at 1e-3 it falls steadily.
KIT_KERAS_HEAD_RATE = 1e-3
DATA = ROOT / "diagnostics" / "demo_data"


def kit_bert(directory: Path) -> Path:
    """A BERT with the demo kit's vocabulary, size and random weights (marked as the kit's, so it is judged by the
    kit's rules, not a pretrained checkpoint's), written by save_pretrained."""
    import tf_keras
    from transformers import BertConfig, BertTokenizerFast, TFBertModel

    from diagnostics.config.run import DEMO_LEARNING_RATE
    from diagnostics.keras.loading import DEMO_MODEL, load_tokenizer

    if (directory / "config.json").is_file():
        return directory
    directory.mkdir(parents=True, exist_ok=True)
    kit = load_tokenizer("demo")
    vocab = directory / "vocab.txt"
    vocab.write_text("\n".join(token for token, _ in sorted(kit.get_vocab().items(), key=lambda kv: kv[1])) + "\n")
    tokenizer = BertTokenizerFast(vocab_file=str(vocab), model_max_length=128)
    tokenizer.save_pretrained(directory)
    tf_keras.utils.set_random_seed(0)
    config = BertConfig(vocab_size=len(tokenizer), hidden_size=DEMO_MODEL["dim"],
                        num_hidden_layers=DEMO_MODEL["n_layers"],
                        num_attention_heads=DEMO_MODEL["n_heads"], intermediate_size=DEMO_MODEL["hidden_dim"],
                        max_position_embeddings=128, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
                        demo_kit=True, demo_kit_learning_rate=DEMO_LEARNING_RATE)
    model = TFBertModel(config)
    model(model.dummy_inputs)
    model.save_pretrained(directory)
    return directory


def healthy_rate(shape: Shape) -> float:
    """The rate a healthy script of this shape trains at: its checkpoint's (see above)."""
    return KIT_BERT_RATE if shape.model == "main_layer_cls_logits" else \
        KIT_RATE if shape.model == "classifier" else KIT_KERAS_HEAD_RATE


def checkpoint_for(shape: Shape, kit: Path, bert: Path) -> Path:
    return bert if shape.model == "main_layer_cls_logits" else kit


def prepare(work: Path, shapes: list[Shape], *, kit: Path, bert: Path, stages: str | None = None,
            skip: str | None = None) -> dict[str, dict]:
    """Write each shape's script in `work/<name>/train.py` (at its checkpoint's healthy rate) and the plan the runner
    reads."""
    plan = {}
    for shape in shapes:
        folder = work / shape.name
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "train.py").write_text(write_script(shape, rate=healthy_rate(shape)))
        plan[shape.name] = {"args": [str(checkpoint_for(shape, kit, bert)), str(DATA / shape.task / "train.jsonl")],
                            "stages": stages, "skip": skip}
    (work / "plan.json").write_text(json.dumps(plan, indent=1))
    return plan


def run(work: Path, names: list[str], timeout: float = 1800) -> None:
    """The runner in a process of its own (a script's global settings, its strategy and precision, stay there)."""
    with open(work / "output.txt", "a") as output:
        subprocess.run([sys.executable, "-m", "tests.usercode.matrix.run", str(work), *names], cwd=ROOT,
                       timeout=timeout, stdout=output, stderr=subprocess.STDOUT, check=False)


def trace_here(work: Path, name: str) -> None:
    """Trace one planned script in this process (`tests.usercode.matrix.run.trace_one`)."""
    from tests.usercode.matrix.run import trace_one

    trace_one(work, name)


def outcome(work: Path, name: str) -> dict:
    """What a script's trace gave: its report (None when none was written), the crash, the seconds."""
    folder = work / name
    report = folder / "report.json"
    crash = folder / "crash.txt"
    return {"report": json.loads(report.read_text()) if report.is_file() else None,
            "crash": crash.read_text() if crash.is_file() else None,
            "seconds": float((folder / "seconds.txt").read_text()) if (folder / "seconds.txt").is_file() else None}
