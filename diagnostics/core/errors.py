"""The one error type for unusable input (unknown checkpoint, task, file, split, bad number)."""


class InputError(ValueError):
    """Input the debugger cannot work with; the message says what is wrong and what to do instead.

    Pages show the message; the command line prints it on one line and exits with status 2. `fix`: the code or
    sentence that mends it, where the input is the user's own code (a trace prints it under the message).
    """

    def __init__(self, *args, fix=None):
        super().__init__(*args)
        self.fix = fix


class NotClassifierError(InputError):
    """The checkpoint loads, but has no TensorFlow sequence-classification model class."""
