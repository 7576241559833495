"""A GLUE sentence-pair classifier trained with Transformers' TF tools, written the way a public example script is:
dataclass arguments parsed with HfArgumentParser and TFTrainingArguments, csv files, labels taken from the training
split, everything built inside the strategy's scope, prepare_tf_dataset followed by with_options, create_optimizer
with warmup, weight decay and a global clipnorm, and the model's internal loss.

The test suite traces it (it was not written around the debugger's checks):

    python tests/scripts/glue_classifier.py --model_name_or_path DIR --train_file train.csv \
        --validation_file validation.csv --output_dir out [--max_seq_length 128] [--learning_rate 5e-5]
"""

import logging
import sys
from dataclasses import dataclass, field
from typing import Optional

import numpy as np
import tensorflow as tf
import tf_keras
import transformers
from datasets import load_dataset
from transformers import (AutoConfig, AutoTokenizer, HfArgumentParser, TFAutoModelForSequenceClassification,
                          TFTrainingArguments, create_optimizer, set_seed)

logger = logging.getLogger(__name__)


@dataclass
class ModelArguments:
    model_name_or_path: str = field(metadata={"help": "A save_pretrained directory or a Hub name."})


@dataclass
class DataArguments:
    train_file: str = field(metadata={"help": "A csv file with sentence1, sentence2 and label."})
    validation_file: Optional[str] = field(default=None, metadata={"help": "The same, held out."})
    max_seq_length: int = field(default=128, metadata={"help": "Longer rows are truncated."})
    probability_loss: bool = field(default=False, metadata={"help": "Compile with a Keras loss on probabilities."})


def main():
    parser = HfArgumentParser((ModelArguments, DataArguments, TFTrainingArguments))
    model_args, data_args, training_args = parser.parse_args_into_dataclasses()

    logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s", handlers=[
        logging.StreamHandler(sys.stdout)])
    logger.setLevel(logging.INFO)
    transformers.utils.logging.set_verbosity_warning()
    logger.info(f"Training/evaluation parameters {training_args}")
    set_seed(training_args.seed)

    files = {"train": data_args.train_file}
    if data_args.validation_file:
        files["validation"] = data_args.validation_file
    raw = load_dataset("csv", data_files=files)

    # The classes are whatever the training file holds.
    label_list = sorted(set(raw["train"]["label"]))
    num_labels = len(label_list)
    label_to_id = {label: index for index, label in enumerate(label_list)}
    logger.info(f"{num_labels} labels: {label_list}")

    config = AutoConfig.from_pretrained(model_args.model_name_or_path, num_labels=num_labels)
    tokenizer = AutoTokenizer.from_pretrained(model_args.model_name_or_path)

    def preprocess(examples):
        encoded = tokenizer(examples["sentence1"], examples["sentence2"], truncation=True,
                            max_length=data_args.max_seq_length)
        encoded["label"] = [label_to_id[label] for label in examples["label"]]
        return encoded

    tokenized = raw.map(preprocess, batched=True)

    with training_args.strategy.scope():
        set_seed(training_args.seed)
        model = TFAutoModelForSequenceClassification.from_pretrained(model_args.model_name_or_path, config=config)

        options = tf.data.Options()
        options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.OFF
        batch_size = training_args.per_device_train_batch_size * training_args.strategy.num_replicas_in_sync
        train_set = model.prepare_tf_dataset(tokenized["train"], shuffle=True, batch_size=batch_size,
                                             tokenizer=tokenizer).with_options(options)
        eval_set = None
        if "validation" in tokenized:
            eval_set = model.prepare_tf_dataset(tokenized["validation"], shuffle=False, batch_size=batch_size,
                                                tokenizer=tokenizer).with_options(options)

        total_steps = int(len(train_set) * training_args.num_train_epochs)
        warmup_steps = training_args.warmup_steps or int(total_steps * training_args.warmup_ratio)
        optimizer, schedule = create_optimizer(
            init_lr=training_args.learning_rate, num_train_steps=total_steps, num_warmup_steps=warmup_steps,
            adam_beta1=training_args.adam_beta1, adam_beta2=training_args.adam_beta2,
            adam_epsilon=training_args.adam_epsilon, weight_decay_rate=training_args.weight_decay,
            adam_global_clipnorm=training_args.max_grad_norm)
        compile_args = {"optimizer": optimizer, "metrics": ["accuracy"], "jit_compile": training_args.xla}
        if data_args.probability_loss:
            compile_args["loss"] = tf_keras.losses.SparseCategoricalCrossentropy(from_logits=False)
        model.compile(**{key: value for key, value in compile_args.items() if value is not None})

        history = model.fit(train_set, validation_data=eval_set, epochs=int(training_args.num_train_epochs))
        logger.info(f"final loss {history.history['loss'][-1]:.4f}")
        model.save_pretrained(training_args.output_dir)
    logger.info(f"labels seen {np.unique(tokenized['train']['label']).tolist()}")


if __name__ == "__main__":
    main()
