import copy

import numpy as np
import pytest

from conftest import make_split, quick_checks
from diagnostics.keras import batches
from diagnostics.checks.data.baselines import check_baselines
from diagnostics.checks.data import duplicates
from diagnostics.checks.data.duplicates import check_duplicates, duplicate_figures
from diagnostics.checks.data.label_balance import check_label_balance
from diagnostics.checks.data.label_range import check_label_range
from diagnostics.checks.data.truncation import check_truncation
from diagnostics.config.run import RunConfig
from diagnostics.config.tasks import TASKS
from diagnostics.core.result import Status

MNLI, SST2, STSB, MRPC = TASKS["mnli"], TASKS["sst2"], TASKS["stsb"], TASKS["mrpc"]


def data_results(config, split, tokenizer):
    """The Data stage's checks but learnability (which trains), through the one runner, as every caller runs them."""
    from diagnostics.core.context import RunContext
    from diagnostics.walk.stages import data_stage

    return data_stage(RunContext(config.validated(), tokenizer, split))


def results_by_id(config, split, tokenizer):
    return {result.id: result for result in data_results(config, split, tokenizer)}


# ------------------------------------------------------------ the first batch


def test_first_batch_comes_from_to_tf_dataset_with_padding(tokenizer, mnli_split):
    batch = batches.build_first_batch(mnli_split, tokenizer, RunConfig(batch_size=4))
    assert batch.error is None
    assert set(batch.tf_batch) == {"input_ids", "attention_mask", "labels"}
    widths = {tuple(value.shape)[1:] for key, value in batch.tf_batch.items() if key != "labels"}
    assert len(widths) == 1  # padded to one length
    assert batch.tf_batch["labels"].numpy().tolist() == [mnli_split[i]["label"] for i in batch.indices]


def test_first_batch_is_seeded_and_shuffled(tokenizer, mnli_split):
    first = batches.build_first_batch(mnli_split, tokenizer, RunConfig(batch_size=6, seed=1)).indices
    again = batches.build_first_batch(mnli_split, tokenizer, RunConfig(batch_size=6, seed=1)).indices
    other = batches.build_first_batch(mnli_split, tokenizer, RunConfig(batch_size=6, seed=2)).indices
    unshuffled = batches.build_first_batch(mnli_split, tokenizer, RunConfig(batch_size=6, shuffle=False)).indices
    assert first == again
    assert unshuffled == list(range(6))
    assert first != unshuffled and first != other  # the order changed, and the seed decides how
    assert len(set(first)) == 6 and all(0 <= index < len(mnli_split) for index in first)


def test_first_batch_tokenizes_only_the_batch_rows(tokenizer, mnli_split, monkeypatch):
    """Tokenizing the whole split to build one batch would take minutes on a real GLUE split."""
    seen = []
    real = type(tokenizer).__call__

    def counting(self, text, *args, **kwargs):
        seen.append(1 if isinstance(text, str) else len(text))
        return real(self, text, *args, **kwargs)

    monkeypatch.setattr(type(tokenizer), "__call__", counting)
    batch = batches.build_first_batch(mnli_split, tokenizer, RunConfig(batch_size=4))
    assert len(mnli_split) == 12
    assert 4 <= sum(seen) <= 8, seen  # the 4 rows (a second pass over them for lengths at most), not 12
    assert len(batch.input_ids) == 4 and len(batch.full_lengths) == 4


# ------------------------------------------------------------ data.columns


def test_columns_default_request_pass(tokenizer, mnli_split):
    assert results_by_id(RunConfig(batch_size=4), mnli_split, tokenizer)["data.columns"].status is Status.PASS


def test_columns_course_labels_name_is_accepted_through_the_collator(tokenizer, mnli_split):
    config = RunConfig(batch_size=4, columns=("input_ids", "attention_mask", "labels"))
    assert results_by_id(config, mnli_split, tokenizer)["data.columns"].status is Status.PASS


def test_columns_missing_requested_column_fail_names_existing_columns(tokenizer, mnli_split):
    config = RunConfig(batch_size=4, columns=("input_ids", "attention_mask", "target"))
    results = results_by_id(config, mnli_split, tokenizer)
    assert results["data.columns"].status is Status.FAIL
    assert "target" in results["data.columns"].summary and "premise" in results["data.columns"].summary
    assert results["data.batch"].status is Status.FAIL
    # One cause: the batch that cannot be built points at the column it asks for (it was a second cause, with a
    # fix of "columns=[...existing columns...]").
    from diagnostics.walk.causes import causes, explain

    explained = explain(list(results.values()))
    assert next(result for result in explained if result.id == "data.batch").explained_by == "data.columns"
    assert [found.owner for found in causes(explained)] == ["data.columns"]


def test_columns_course_script_without_attention_mask_warn(tokenizer, mnli_split):
    config = RunConfig(batch_size=4, columns=("input_ids", "labels"))
    result = results_by_id(config, mnli_split, tokenizer)["data.columns"]
    assert result.status is Status.WARN
    assert "attention_mask" in result.summary


def test_columns_split_without_task_text_column_fail(tokenizer, mnli_split):
    split = mnli_split.rename_column("premise", "sentence1")
    results = results_by_id(RunConfig(batch_size=4), split, tokenizer)
    assert results["data.columns"].status is Status.FAIL
    assert "premise" in results["data.columns"].summary and "sentence1" in results["data.columns"].summary
    assert results["data.decoded_samples"].status is Status.SKIP


# ------------------------------------------------------------ data.batch


def test_batch_labels_inside_inputs_pass(tokenizer, mnli_split):
    result = results_by_id(RunConfig(batch_size=4), mnli_split, tokenizer)["data.batch"]
    assert result.status is Status.PASS
    assert result.evidence["labels_at"] == "inputs"
    assert {"key": "labels", "shape": [4], "dtype": "int64", "in": "inputs"} in result.evidence["entries"]


def test_batch_labels_separate_pass(tokenizer, mnli_split):
    result = results_by_id(RunConfig(batch_size=4, labels_in="separate"), mnli_split, tokenizer)["data.batch"]
    assert result.status is Status.PASS
    assert result.evidence["labels_at"] == "separate"


def test_batch_without_labels_fail(tokenizer, mnli_split):
    result = results_by_id(RunConfig(batch_size=4, columns=("input_ids", "attention_mask")), mnli_split, tokenizer)
    assert result["data.batch"].status is Status.FAIL
    assert "no labels" in result["data.batch"].summary


def test_batch_larger_than_split_warn(tokenizer, mnli_split):
    result = results_by_id(RunConfig(batch_size=64), mnli_split, tokenizer)["data.batch"]
    assert result.status is Status.WARN
    assert "fewer rows than the batch size 64" in result.summary


def test_batch_tokenizer_without_pad_token_fail(tokenizer, mnli_split):
    no_pad = copy.deepcopy(tokenizer)
    no_pad.pad_token = None
    result = results_by_id(RunConfig(batch_size=4), mnli_split, no_pad)["data.batch"]
    assert result.status is Status.FAIL
    assert "pad_token" in result.fix


# ------------------------------------------------------------ data.decoded_samples


def test_decoded_samples_rows_carry_text_and_label_names(tokenizer, mnli_split):
    result = results_by_id(RunConfig(batch_size=4, shuffle=False), mnli_split, tokenizer)["data.decoded_samples"]
    assert result.status is Status.PASS
    first = result.evidence["rows"][0]
    assert first["decoded"].startswith("[CLS] the cat sat on the mat [SEP]")
    assert first["label"] == 0 and first["label_name"] == "entailment"


def test_decoded_samples_unknown_words_warn(tokenizer):
    split = make_split("sst2", [("zebra quokka xylophone", 0), ("narwhal pangolin", 1)] * 2)
    result = results_by_id(RunConfig(task="sst2", batch_size=4), split, tokenizer)["data.decoded_samples"]
    assert result.status is Status.WARN
    assert "unknown" in result.summary


def test_a_text_column_of_ids_or_one_repeated_word_warns_naming_its_rows(tokenizer):
    # The sentence column filled from the wrong field: ids where sentences belong, and a placeholder word.
    rows = [("10482", 0), ("10483", 1), ("ok ok ok", 0), ("a fine film", 1), ("-- 7 --", 0)] * 2
    result = results_by_id(RunConfig(task="sst2", batch_size=4), make_split("sst2", rows), tokenizer)[
        "data.decoded_samples"]
    assert result.status is Status.WARN and result.condition == "warn_not_prose_share"
    assert "80% of sentence's cells hold no words (8 of the 10 rows scanned" in result.summary
    assert "'10482'" in result.summary and "rename_column" in result.fix


def test_short_phrases_and_single_words_are_text():
    from diagnostics.config.tasks import get_task

    split = make_split("sst2", [("great", 1), ("the worst !", 0), ("it 's a 10", 1), ("a a", 0), ("bad", 0)])
    found = batches.not_prose(split, get_task("sst2"))
    assert found["sentence"]["count"] == 1 and found["sentence"]["rows"] == [3]  # "a a" alone: one word repeated


# ------------------------------------------------------------ data.label_range


def test_label_range_valid_labels_pass():
    result = check_label_range(np.array([0, 1, 2, 2]), [0, 1], MNLI, 3, "train")
    assert result.status is Status.PASS


def test_label_range_within_a_threshold_set_for_the_run_passes_and_still_names_the_labels_outside():
    from diagnostics.core.check import per_run_thresholds

    with per_run_thresholds({"data.label_range": {"max_invalid_labels": 5}}):
        result = check_label_range(np.array([0, 1, 5, 2]), [5, 0], MNLI, 3, "train")
    assert result.status is Status.PASS and result.evidence["invalid_labels"] == 2
    assert "(5 x1)" in result.summary and "mnli has 3 classes" in result.summary
    assert result.summary.endswith("It passes because this run sets max_invalid_labels to 5 (--threshold; 0 by "
                                   "default).") and result.fix is None


def test_label_range_label_equal_to_num_labels_fail_names_values_and_fix():
    # Label 2 is an MNLI label the two-output head has no output for: the head's cause (model.config's), shown here
    # with the rows and the one fix of the head.
    result = check_label_range(np.array([0, 1, 2, 2, 1]), [2, 0], MNLI, 2, "train")
    assert result.status is Status.FAIL and result.condition == "labels_beyond_head"
    assert "2 rows are labelled 2 contradiction" in result.summary and "num_labels=2" in result.summary
    assert result.fix == MNLI.head_fix() and "num_labels=3" in result.fix
    assert result.evidence["beyond_head_rows"] == [2, 3] and result.evidence["batch_positions"] == [0]
    assert result.evidence["invalid_labels"] == 0


def test_label_range_label_outside_the_tasks_classes_fail_is_the_datas():
    result = check_label_range(np.array([0, 1, 5, 2]), [5, 0], MNLI, 3, "train")
    assert result.status is Status.FAIL and result.condition == "max_invalid_labels"
    assert "(5 x1)" in result.summary and "mnli has 3 classes" in result.summary
    assert "Drop or relabel these rows" in result.fix and "num_labels" not in result.fix


def test_label_range_boundary_top_label_pass():
    assert check_label_range(np.array([0, 1]), [1], SST2, 2, "train").status is Status.PASS


def test_label_range_test_split_minus_one_fail():
    result = check_label_range(np.array([-1] * 5), [-1, -1], MNLI, 3, "test_matched")
    assert result.status is Status.FAIL
    assert "-1 x5" in result.summary and "test" in result.summary
    assert "'validation'" in result.fix


def test_label_range_names_every_bad_row_with_the_word_its_count_takes():
    """One stray label is "row 8", not "rows 8"; a stray 7 beside an empty label names both rows; a -1 on one row
    of a training split is a row to drop, not a test split."""
    from diagnostics.keras.batches import UNUSABLE_LABEL

    one = check_label_range(np.array([0, 1] * 4 + [7, 0]), [0], SST2, 2, "train")
    assert one.summary.endswith("(row 8).") and "rows" not in one.summary.split("(")[-1]
    labels = np.array([0, 1, 0, 1, 7, 0, 1, 0, UNUSABLE_LABEL, 1])
    written = [str(label) for label in labels]
    written[8] = ""
    mixed = check_label_range(labels, [0], SST2, 2, "train", written)
    assert "(empty) x1" in mixed.summary and "(rows 4, 8)" in mixed.summary
    stray_minus_one = check_label_range(np.array([0, 1, -1, 1, 7, 0]), [0], SST2, 2, "train")
    assert "test split" not in stray_minus_one.summary and "(rows 2, 4)" in stray_minus_one.summary
    assert "Drop or relabel these rows" in stray_minus_one.fix


def test_label_range_regression_scores_pass_and_out_of_range_fail():
    assert check_label_range(np.array([0.0, 2.5, 5.0]), [5.0], STSB, 1, "train").status is Status.PASS
    result = check_label_range(np.array([0.0, 5.5, -1.0]), [0.0], STSB, 1, "test")
    assert result.status is Status.FAIL


def test_label_range_whole_pipeline_on_three_class_data_with_two_labels_fail(tokenizer, mnli_split):
    result = results_by_id(RunConfig(batch_size=4, num_labels=2), mnli_split, tokenizer)["data.label_range"]
    assert result.status is Status.FAIL and result.condition == "labels_beyond_head"
    assert result.evidence["split_invalid"] == [] and len(result.evidence["beyond_head_rows"]) == 4


# ------------------------------------------------------------ data.label_balance


def test_label_balance_balanced_pass():
    result = check_label_balance(np.array([0, 1, 2] * 10), [0, 1, 2, 0], MNLI, 3)
    assert result.status is Status.PASS
    assert result.evidence["split_counts"] == [10, 10, 10]


def test_label_balance_without_a_first_batch_judges_the_split_and_says_there_was_no_batch():
    result = check_label_balance(np.array([0, 1, 2] * 4), [], MNLI, 3)
    assert result.status is Status.PASS
    assert "no first batch to compare" in result.summary and "0 of 3" not in result.summary


def test_label_balance_figure_draws_the_first_batch_only_when_there_is_one():
    from diagnostics.report.plots import label_balance_figure

    with_batch = label_balance_figure(check_label_balance(np.array([0, 1, 2] * 4), [0, 1, 2, 0], MNLI, 3))
    without = label_balance_figure(check_label_balance(np.array([0, 1, 2] * 4), [], MNLI, 3))
    assert [bar.name for bar in with_batch.data] == ["split", "first batch"]
    assert [bar.name for bar in without.data] == ["split"] and list(without.data[0].y) == [1 / 3] * 3


def test_label_balance_dominant_label_warn():
    result = check_label_balance(np.array([0] * 90 + [1] * 10), [0, 0, 1, 0], SST2, 2)
    assert result.status is Status.WARN
    assert "negative makes up 90%" in result.summary


def test_label_balance_exactly_at_threshold_pass():
    result = check_label_balance(np.array([0] * 80 + [1] * 20), [0, 1], SST2, 2)  # at the declared 0.8
    assert result.status is Status.PASS


def test_label_balance_label_missing_from_batch_warns_only_when_chance_rarely_does_that():
    split = np.array([0, 1, 2] * 10)
    # Six rows without a third of the split's labels: a shuffled batch does that one time in eleven.
    assert check_label_balance(split, [0, 0, 1, 1, 0, 1], MNLI, 3).status is Status.PASS
    result = check_label_balance(split, [0, 1] * 12, MNLI, 3)  # 24 rows: about once in 17,000
    assert result.status is Status.WARN
    assert "no contradiction" in result.summary and "17,000" in result.summary
    assert result.evidence["chance_absent"] == pytest.approx((2 / 3) ** 24)


def test_label_balance_a_crowded_batch_is_judged_by_its_binomial_tail():
    split = np.array([1] * 54 + [0] * 46)
    # 7 of 8 rows sharing a label that holds 54% of the split: a shuffled batch shows that about once in 18.
    calm = check_label_balance(split, [1] * 7 + [0], MRPC, 2)
    assert calm.status is Status.PASS
    assert calm.evidence["chance_crowded"] == pytest.approx(8 * 0.54 ** 7 * 0.46 + 0.54 ** 8)
    # A sorted split's first batch: 16 of 16 rows one label, about once in 19,000.
    sorted_ = check_label_balance(split, [1] * 16, MRPC, 2)
    assert sorted_.status is Status.WARN
    assert "has no not_equivalent" in sorted_.summary and "19,000" in sorted_.summary and "shuffle=True" in sorted_.fix
    crowded = check_label_balance(split, [1] * 15 + [0], MRPC, 2)  # 15 of 16: about once in 1,300
    assert crowded.status is Status.WARN and "15 of 16 rows" in crowded.summary and "1,300" in crowded.summary


def test_label_balance_regression_histogram_pass():
    result = check_label_balance(np.array([0.5, 2.5, 4.5]), [2.5], STSB, 1)
    assert result.status is Status.PASS
    assert sum(result.evidence["split"]["counts"]) == 3


# ------------------------------------------------------------ data.baselines


def test_baselines_balanced_three_class_pass_with_ln3():
    result = check_baselines(np.array([0, 1, 2] * 5), MNLI, 3)
    assert result.status is Status.PASS
    assert result.evidence["uniform_loss"] == pytest.approx(np.log(3))
    assert result.evidence["majority_accuracy"] == pytest.approx(1 / 3)


def test_baselines_majority_above_threshold_warn():
    result = check_baselines(np.array([1] * 95 + [0] * 5), SST2, 2)
    assert result.status is Status.WARN
    assert "95%" in result.summary


def test_baselines_regression_variance_pass():
    result = check_baselines(np.array([1.0, 3.0]), STSB, 1)
    assert result.evidence["mean_predictor_mse"] == pytest.approx(1.0)
    assert result.status is Status.PASS


@pytest.mark.parametrize("task, labels", [("mnli", [-1, -1]), ("mnli", [7, 9]), ("stsb", [float("nan"), 6.0])])
def test_baselines_and_balance_no_label_in_range_skip_naming_label_range(demo_inputs, task, labels):
    """The runner skips what counts labels when none lies in range (its "counted" need); data.label_range names why."""
    from diagnostics.core.context import RunContext
    from diagnostics.walk.runner import run_units

    tokenizer, _ = demo_inputs
    split = make_split(task, [("a cat", "a dog", label) for label in labels])
    run = RunContext(RunConfig(task=task, batch_size=2), tokenizer, split, lambda *args: None)
    results = {result.id: result for result in run_units(run, ("labels",))}
    assert results["data.label_range"].status is Status.FAIL
    for check in ("data.label_balance", "data.baselines"):
        assert results[check].status is Status.SKIP and "data.label_range" in results[check].summary, check


# ------------------------------------------------------------ data.truncation


def _figures(lengths, kept, max_length):
    return {"max_length": max_length, "rows": len(lengths), "truncated_rows": sum(l > max_length for l in lengths),
            "truncated_share": sum(l > max_length for l in lengths) / len(lengths),
            "padding_share": 1 - sum(kept) / (max(kept) * len(kept)), "lengths": lengths, "padded_length": max(kept)}


def test_truncation_short_rows_pass():
    assert check_truncation(_figures([10, 12, 11, 12], [10, 12, 11, 12], 32)).status is Status.PASS


def test_truncation_many_cut_rows_warn():
    result = check_truncation(_figures([40, 50, 10, 60], [32, 32, 10, 32], 32))
    assert result.status is Status.WARN
    assert "3 of 4 rows" in result.summary


def test_truncation_exactly_at_max_length_is_not_cut_pass():
    assert check_truncation(_figures([32, 32], [32, 32], 32)).status is Status.PASS


def test_padding_is_a_finding_only_when_the_pipeline_pads_to_one_length():
    """Padding per batch (DataCollatorWithPadding) is the fix, never the finding, however uneven the rows; a batch
    padded to max_length past its longest row warns with that fix."""
    per_batch = {**_figures([4, 4, 4, 40], [4, 4, 4, 40], 64), "fixed_padding": False}
    assert per_batch["padding_share"] > 0.6
    assert check_truncation(per_batch).status is Status.PASS
    fixed = {**_figures([4, 4, 4, 10], [4, 4, 4, 10], 64), "padding_share": 1 - 22 / 256, "padded_length": 64,
             "fixed_padding": True}
    result = check_truncation(fixed)
    assert result.status is Status.WARN and "DataCollatorWithPadding" in str(result.fix)


def test_truncation_measured_on_the_real_batch(tokenizer, mnli_split):
    result = results_by_id(RunConfig(batch_size=12, max_length=10, shuffle=False), mnli_split, tokenizer)[
        "data.truncation"
    ]
    assert result.evidence["truncated_rows"] == sum(length > 10 for length in result.evidence["lengths"])
    assert result.status is Status.WARN


# ------------------------------------------------------------ data.duplicates


def test_duplicates_distinct_rows_pass(tokenizer, mnli_split):
    assert results_by_id(RunConfig(batch_size=4), mnli_split, tokenizer)["data.duplicates"].status is Status.PASS


def test_duplicates_conflicting_labels_warn():
    split = make_split("sst2", [("a good film", 1), ("a good film", 0), ("a bad film", 0)])
    result = check_duplicates(duplicate_figures(split, SST2))
    assert result.status is Status.WARN
    assert result.evidence["conflicting_rows"] == 2
    assert result.evidence["duplicate_rows"] == 1


def test_duplicates_show_the_conflicting_rows_and_are_scanned_once_per_split():
    split = make_split("sst2", [("a good film", 1), ("a bad film", 0), ("a good film", 0), ("a sad film", 0)])
    figures = duplicate_figures(split, SST2)
    assert [(row["sentence"], row["label"]) for row in figures["conflict_examples"]] in (
        [("a good film", 1), ("a good film", 0)], [("a good film", 0), ("a good film", 1)])
    assert (split._fingerprint, ("sentence",), 5) in duplicates._DUPLICATES_MEMO
    assert duplicate_figures(split, SST2) == figures


def test_duplicates_repeats_with_same_label_warn_above_threshold():
    split = make_split("sst2", [("a good film", 1)] * 3 + [("a bad film", 0)])
    result = check_duplicates(duplicate_figures(split, SST2))
    assert result.status is Status.WARN
    assert result.evidence["conflicting_rows"] == 0


# ------------------------------------------------------------ the stage


def test_stage_runs_every_check_on_a_regression_task(tokenizer):
    split = make_split("stsb", [("the cat sat", "a cat sat", 4.2), ("the dog ran", "anna read", 0.4)] * 3)
    results = results_by_id(RunConfig(task="stsb", batch_size=4), split, tokenizer)
    assert set(results) == quick_checks("data")
    assert results["data.batch"].evidence["entries"][-1]["dtype"] == "float32"
    assert all(result.status is not Status.ERROR for result in results.values())


def test_stage_on_clean_data_has_no_failure(tokenizer, mnli_split):
    results = data_results(RunConfig(batch_size=6), mnli_split, tokenizer)
    assert [r.id for r in results if r.status in (Status.FAIL, Status.ERROR)] == []


def test_label_balance_regression_scores_in_one_bin_warn():
    result = check_label_balance(np.array([2.6] * 9 + [4.0]), [2.6], STSB, 1)
    assert result.status is Status.WARN and "90%" in result.summary


def test_baselines_regression_constant_scores_warn():
    assert check_baselines(np.array([3.0, 3.0, 3.0]), STSB, 1).status is Status.WARN


def test_truncation_of_rows_stored_without_special_tokens_compares_like_with_like(bert_tokenizer):
    # Rows a tokenizer of another library made (KerasHub's WordPiece adds no [CLS] and [SEP]) read as every row cut by
    # two tokens when re-tokenized with them: "128 of 128 rows lose tokens" on a notebook that cut none.
    from datasets import Dataset

    from diagnostics.checks.data.truncation import users_truncation
    from diagnostics.config.tasks import TASKS

    texts = ["a cat sat on the mat", "the dog ran in the park today", "good film"]
    plain = [bert_tokenizer(text, add_special_tokens=False)["input_ids"] for text in texts]
    cut = [plain[0], plain[1][:3], plain[2]]  # the second row truncated to 3 tokens
    for stored, expected in ((plain, []), (cut, [1])):
        split = Dataset.from_dict({"sentence": texts, "label": [0, 1, 0], "input_ids": stored})
        found = users_truncation(split, bert_tokenizer, TASKS["sst2"])
        assert found["truncated_rows"] == expected
    with_special = [bert_tokenizer(text)["input_ids"] for text in texts]  # as Transformers stores them: no change
    split = Dataset.from_dict({"sentence": texts, "label": [0, 1, 0], "input_ids": with_special})
    assert users_truncation(split, bert_tokenizer, TASKS["sst2"])["truncated_rows"] == []
