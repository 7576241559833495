"""The one error type for unusable input (unknown checkpoint, task, file, split, bad number)."""


class InputError(ValueError):
    """Input the debugger cannot work with; the message says what is wrong and what to do instead.

    Pages show the message; the command line prints it on one line and exits with status 2. Where the input is the
    user's own code: `fix`, the code or sentence that mends it (a trace prints it under the message), and `kind`,
    what a trace's report calls the error ("input" when not given; `repair_errors` mends some kinds line for line).
    """

    def __init__(self, *args, fix=None, kind: str | None = None):
        super().__init__(*args)
        self.fix, self.kind = fix, kind


class NotClassifierError(InputError):
    """The checkpoint loads, but has no TensorFlow sequence-classification model class."""
