"""Build the demo kit's checkpoint into $DEBUGGER_CACHE_DIR and load it back once, as the Docker image's build
does, so a cold start serves the first page without building anything.

    DEBUGGER_CACHE_DIR=/path python scripts/build_demo_kit.py
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import diagnostics  # noqa: E402
diagnostics.own_process()  # Keras 2 for tf.keras, quiet libraries, before TensorFlow loads
from diagnostics.keras.loading import demo_checkpoint_dir, load_model, load_tokenizer  # noqa: E402


def main() -> int:
    directory = demo_checkpoint_dir()
    load_tokenizer("demo")
    load_model("demo", 3)
    print(f"demo kit checkpoint: {directory}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
