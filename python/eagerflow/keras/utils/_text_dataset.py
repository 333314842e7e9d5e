"""keras.utils.text_dataset_from_directory: a batched ef.data.Dataset of the .txt files under
a folder as string tensors, labelled from their class folders as Keras does."""
from . import _directory


def text_dataset_from_directory(directory, labels="inferred", label_mode="int", class_names=None, batch_size=32,
                                max_length=None, shuffle=True, seed=None, validation_split=None, subset=None,
                                follow_links=False, format="tf", verbose=True):
    """Batches (texts string [batch], labels) of the .txt files in `directory`/<class>/...,
    each cut to its first max_length bytes when given; labels as image_dataset_from_directory."""
    import eagerflow as ef
    _directory.check_labels_arg(labels, class_names, "text")
    _directory.check_label_mode(label_mode)
    if format != "tf":
        raise ValueError(f'`format` should be "tf" here (an ef.data.Dataset). Received: format={format}')

    def load(path):
        text = ef.io.read_file(path)
        return ef.strings.substr(text, 0, max_length) if max_length is not None else text
    return _directory.from_directory(directory, labels, label_mode, class_names, batch_size, shuffle, seed,
                                     validation_split, subset, follow_links, verbose, (".txt",), load, "text files")
