"""Write the offline demo kit's GLUE-schema samples (diagnostics/demo_data/<task>/<split>.jsonl).

The rows are generated from small templates with a fixed seed, so that each task's
labels follow from the text (a model can learn them) and the files are reproducible:
    python scripts/make_demo_samples.py
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from diagnostics.config.tasks import TASKS  # noqa: E402

OUT = Path(__file__).resolve().parents[1] / "diagnostics" / "demo_data"
TRAIN_ROWS = 128
OTHER_ROWS = 64

NAMES = ["anna", "ben", "carla", "david", "elena", "farid", "grace", "hugo", "iris", "jonas"]
NOUNS = ["film", "book", "song", "meal", "hotel", "trip", "show", "game", "story", "concert"]
PLACES = ["paris", "the park", "the station", "the library", "the market", "the river", "the office", "the beach"]
POSITIVE = ["wonderful", "brilliant", "delightful", "moving", "charming", "excellent", "superb", "great"]
NEGATIVE = ["boring", "awful", "dull", "painful", "clumsy", "terrible", "tedious", "bad"]
VERBS = [("reads", "read", "a newspaper"), ("cooks", "cooked", "dinner"), ("paints", "painted", "a wall"),
         ("drives", "drove", "a truck"), ("plays", "played", "the piano"), ("writes", "wrote", "a letter")]
SYNONYMS = {"bought": "purchased", "started": "began", "said": "stated", "big": "large", "quick": "fast",
            "help": "assist", "show": "demonstrate", "end": "finish"}
FACTS = [("the company {v} a {a} factory in {p}", "bought", "big"),
         ("the team {v} a {a} project near {p}", "started", "quick"),
         ("the mayor {v} the {a} plan for {p} would {x}", "said", "big")]


def sst2(rng, label):
    noun = rng.choice(NOUNS)
    words = POSITIVE if label == 1 else NEGATIVE
    first, second = rng.sample(words, 2)
    pattern = rng.choice(["the {n} was {a} and {b} .", "a {a} {n} , truly {b} .", "what a {a} {n} ; {b} "
                                                                                  "from start to end ."])
    return {"sentence": pattern.format(n=noun, a=first, b=second)}


def cola(rng, label):
    name, noun, place = rng.choice(NAMES), rng.choice(NOUNS), rng.choice(PLACES)
    present, past, obj = rng.choice(VERBS)
    words = f"{name} {past} {obj} at {place} after the {noun}".split()
    if label == 0:
        rng.shuffle(words)
        words.insert(rng.randrange(len(words)), rng.choice(["the", "at", "a"]))
    return {"sentence": " ".join(words) + " ."}


def _fact(rng):
    template, verb, adj = rng.choice(FACTS)
    place = rng.choice(PLACES)
    text = template.format(v=verb, a=adj, p=place, x="help")
    return text, verb, adj, place


def mrpc(rng, label):
    text, verb, adj, place = _fact(rng)
    if label == 1:
        other = text.replace(verb, SYNONYMS[verb]).replace(adj, SYNONYMS[adj])
    else:
        other = text.replace(place, rng.choice([p for p in PLACES if p != place])).replace(verb, rng.choice(
            [v for v in SYNONYMS if v != verb]))
    return {"sentence1": text + " .", "sentence2": other + " ."}


def qqp(rng, label):
    noun, place = rng.choice(NOUNS), rng.choice(PLACES)
    first = f"what is the best {noun} to enjoy in {place} ?"
    if label == 1:
        second = rng.choice([f"which {noun} should i enjoy in {place} ?", f"in {place} , what {noun} is the best ?"])
    else:
        other = rng.choice([n for n in NOUNS if n != noun])
        second = rng.choice([f"how much does a {other} cost in {place} ?", f"why is the {other} in {place} closed ?"])
    return {"question1": first, "question2": second}


def stsb(rng, label):
    name, noun, place = rng.choice(NAMES), rng.choice(NOUNS), rng.choice(PLACES)
    present, past, obj = rng.choice(VERBS)
    first = [name, past, obj, "at", place, "before", "the", noun]
    keep = rng.randint(0, len(first))
    other_name = rng.choice([n for n in NAMES if n != name])
    second = first[:keep] + [rng.choice(NOUNS + PLACES + [other_name]) for _ in first[keep:]]
    score = round(5.0 * keep / len(first), 2)
    return {"sentence1": " ".join(first) + " .", "sentence2": " ".join(second) + " ."}, score


def mnli(rng, label):
    name, place, noun = rng.choice(NAMES), rng.choice(PLACES), rng.choice(NOUNS)
    present, past, obj = rng.choice(VERBS)
    premise = f"{name} {past} {obj} at {place} while talking about the {noun} ."
    hypothesis = [
        f"{name} {past} {obj} .",
        f"{name} {past} {obj} because a friend asked .",
        f"{name} never {past} {obj} .",
    ][label]
    return {"premise": premise, "hypothesis": hypothesis}


def qnli(rng, label):
    name, place = rng.choice(NAMES), rng.choice(PLACES)
    present, past, obj = rng.choice(VERBS)
    question = f"where did {name} go after work ?"
    if label == 0:
        sentence = f"after work , {name} went to {place} and {past} {obj} ."
    else:
        sentence = f"{name} {past} {obj} before work , as usual ."
    return {"question": question, "sentence": sentence}


def rte(rng, label):
    text, verb, adj, place = _fact(rng)
    hypothesis = f"something happened in {place} ." if label == 0 else f"nothing happened in {place} ."
    return {"sentence1": text + " .", "sentence2": hypothesis}


def wnli(rng, label):
    first, second = rng.sample(NAMES, 2)
    noun = rng.choice(NOUNS)
    sentence = f"{first} thanked {second} because she enjoyed the {noun} ."
    hypothesis = f"{first} enjoyed the {noun} ." if label == 1 else f"{second} enjoyed the {noun} ."
    return {"sentence1": sentence, "sentence2": hypothesis}


GENERATORS = {"sst2": sst2, "cola": cola, "mrpc": mrpc, "qqp": qqp, "stsb": stsb, "mnli": mnli,
              "qnli": qnli, "rte": rte, "wnli": wnli, "ax": mnli}


def make_rows(task_name: str, split: str, count: int, seed: int) -> list[dict]:
    task = TASKS[task_name]
    rng = random.Random(f"{task_name}/{split}/{seed}")
    generate = GENERATORS[task_name]
    rows = []
    for index in range(count):
        label = rng.random() if task.regression else index % len(task.label_names)
        produced = generate(rng, label)
        if task.regression:
            fields, label = produced
        else:
            fields = produced
        if split.startswith("test"):
            label = -1
        rows.append({**fields, "label": label, "idx": index})
    if not split.startswith("test"):
        rng.shuffle(rows)
        for index, row in enumerate(rows):
            row["idx"] = index
    return rows


def main() -> None:
    for name, task in TASKS.items():
        for split in task.splits:
            count = TRAIN_ROWS if split == "train" else OTHER_ROWS
            path = OUT / name / f"{split}.jsonl"
            path.parent.mkdir(parents=True, exist_ok=True)
            with path.open("w") as handle:
                for row in make_rows(name, split, count, seed=0):
                    handle.write(json.dumps(row) + "\n")
    print(f"wrote samples under {OUT}")


if __name__ == "__main__":
    main()
