"""What image_dataset_from_directory and text_dataset_from_directory share, with Keras' rules:
the files are listed in sorted order (class folders sorted, then each folder's tree), shuffled
by NumPy's RandomState(seed) with their labels, and the last validation_split of them is the
validation subset, so a training and a validation call with the same seed do not overlap."""
import os

import numpy as np


def attach(ds, **attrs):
    """Sets Keras' extra attributes (class_names, file_paths) on a Dataset."""
    for name, value in attrs.items():
        try:
            setattr(ds, name, value)
        except AttributeError:  # a core whose Dataset takes no attributes (python/src/dataset.cpp)
            pass
    return ds


def check_labels_arg(labels, class_names, what):
    if labels not in ("inferred", None):
        if not isinstance(labels, (list, tuple)):
            raise ValueError(
                f"`labels` argument should be a list/tuple of integer labels, of the same size as the number of {what} "
                "files in the target directory. If you wish to infer the labels from the subdirectory names in the "
                'target directory, pass `labels="inferred"`. If you wish to get a dataset that only contains '
                f"{what} samples (no labels), pass `labels=None`. Received: labels={labels}")
        if class_names:
            raise ValueError(f'You can only pass `class_names` if `labels="inferred"`. Received: labels={labels}, and '
                             f"class_names={class_names}")


def check_label_mode(label_mode):
    if label_mode not in {"int", "categorical", "binary", None}:
        raise ValueError('`label_mode` argument must be one of "int", "categorical", "binary", or None. '
                         f"Received: label_mode={label_mode}")


def check_validation_split(validation_split, subset, shuffle, seed):
    if validation_split and not 0 < validation_split < 1:
        raise ValueError(f"`validation_split` must be between 0 and 1, received: {validation_split}")
    if (validation_split or subset) and not (validation_split and subset):
        raise ValueError("If `subset` is set, `validation_split` must be set, and inversely.")
    if subset not in ("training", "validation", "both", None):
        raise ValueError(f'`subset` must be either "training", "validation" or "both", received: {subset}')
    if validation_split and shuffle and seed is None:
        raise ValueError("If using `validation_split` and shuffling the data, you must provide a `seed` argument, to "
                         "make sure that there is no overlap between the training and validation subset.")


def _files_under(directory, follow_links, formats):
    for root, _, files in sorted(os.walk(directory, followlinks=follow_links), key=lambda w: w[0]):
        for name in sorted(files):
            if name.lower().endswith(formats):
                yield os.path.join(root, name)


def index_directory(directory, labels, formats, class_names=None, shuffle=True, seed=None, follow_links=False,
                    verbose=True):
    """(file paths, labels or None, class names or None), shuffled as Keras shuffles them."""
    if not os.path.isdir(directory):
        raise ValueError(f"Expected the directory {directory!r} to exist and be a directory")
    if labels == "inferred":
        subdirs = [d for d in sorted(os.listdir(directory))
                   if os.path.isdir(os.path.join(directory, d)) and not d.startswith(".")]
        if class_names is not None:
            if not set(class_names).issubset(set(subdirs)):
                raise ValueError("The `class_names` passed did not match the names of the subdirectories of the "
                                 f"target directory. Expected: {subdirs} (or a subset of it), but received: "
                                 f"class_names={class_names}")
            subdirs = list(class_names)
    else:
        subdirs = [""]
        if class_names is not None:
            if labels is None:
                raise ValueError("When `labels=None` (no labels), argument `class_names` cannot be specified.")
            raise ValueError("When argument `labels` is specified, argument `class_names` cannot be specified (the "
                             "`class_names` will be the sorted list of labels).")
    paths, found = [], []
    for index, sub in enumerate(subdirs):
        here = list(_files_under(os.path.join(directory, sub), follow_links, formats))
        paths += here
        found += [index] * len(here)
    if labels == "inferred":
        labels = np.array(found, dtype="int32")
        class_names = subdirs
    elif labels is None:
        class_names = None
    else:
        if len(labels) != len(paths):
            raise ValueError("Expected the lengths of `labels` to match the number of files in the target directory. "
                             f"len(labels) is {len(labels)} while we found {len(paths)} files in directory "
                             f"{directory}.")
        class_names = [str(label) for label in sorted(set(labels))]
    if verbose:
        print(f"Found {len(paths)} files." if labels is None else
              f"Found {len(paths)} files belonging to {len(class_names)} classes.")
    if shuffle:
        if seed is None:
            seed = np.random.randint(1e6)
        np.random.RandomState(seed).shuffle(paths)
        if labels is not None:
            labels = np.array(labels) if isinstance(labels, (list, tuple)) else labels
            np.random.RandomState(seed).shuffle(labels)  # the same permutation as the paths
    return paths, labels, class_names


def split(samples, labels, validation_split, subset):
    """The training (all but the last validation_split) or validation (the last) part."""
    if not validation_split:
        return samples, labels
    n_val = int(validation_split * len(samples))
    if subset == "training":
        print(f"Using {len(samples) - n_val} files for training.")
        return samples[:-n_val], None if labels is None else labels[:-n_val]
    if subset == "validation":
        print(f"Using {n_val} files for validation.")
        return samples[-n_val:], None if labels is None else labels[-n_val:]
    raise ValueError(f'`subset` must be either "training" or "validation", received: {subset}')


def labels_dataset(labels, label_mode, num_classes):
    import eagerflow as ef
    labels = np.asarray(labels)
    labels = labels.astype("int32") if labels.dtype.kind in "iub" else labels.astype("float32")
    if label_mode == "binary":
        return ef.data.Dataset.from_tensor_slices(labels.astype("float32").reshape(-1, 1))
    if label_mode == "categorical":
        return ef.data.Dataset.from_tensor_slices(np.eye(num_classes, dtype="float32")[labels.astype("int64")])
    return ef.data.Dataset.from_tensor_slices(labels)


def paths_to_dataset(paths, labels, label_mode, num_classes, load, shuffle, buffer_size, seed):
    """(element, label) pairs, or elements alone without labels: load(path) maps each file."""
    import eagerflow as ef
    ds = ef.data.Dataset.from_tensor_slices(np.array(paths, dtype=object))
    if label_mode:
        ds = ef.data.Dataset.zip((ds, labels_dataset(labels, label_mode, num_classes)))
    if shuffle:
        ds = ds.shuffle(buffer_size or 1024, seed=seed)
    return ds.map((lambda x, y: (load(x), y)) if label_mode else load)


def from_directory(directory, labels, label_mode, class_names, batch_size, shuffle, seed, validation_split, subset,
                   follow_links, verbose, formats, load, what):
    """The dataset (or [training, validation] with subset="both") of the files, batched."""
    import eagerflow as ef
    if labels is None or label_mode is None:
        labels, label_mode = None, None
    check_validation_split(validation_split, subset, shuffle, seed)
    if seed is None:
        seed = np.random.randint(1e6)
    paths, labels, class_names = index_directory(os.fspath(directory), labels, formats, class_names, shuffle, seed,
                                                 follow_links, verbose)
    if label_mode == "binary" and len(class_names) != 2:
        raise ValueError(f'When passing `label_mode="binary"`, there must be exactly 2 class_names. Received: '
                         f"class_names={class_names}")
    num_classes = len(class_names) if class_names else 0
    buffer = batch_size * 8 if batch_size is not None else 1024

    def make(part_paths, part_labels, shuffled, where=""):
        if not part_paths:
            raise ValueError(f"No {where}{what} found in directory {directory}. Allowed formats: {formats}")
        ds = paths_to_dataset(part_paths, part_labels, label_mode, num_classes, load, shuffled, buffer, seed)
        if batch_size is not None:
            ds = ds.batch(batch_size)
        return attach(ds.prefetch(ef.data.AUTOTUNE), class_names=class_names, file_paths=part_paths)

    if subset == "both":
        train = split(paths, labels, validation_split, "training")
        val = split(paths, labels, validation_split, "validation")
        if not train[0]:
            raise ValueError(f"No training {what} found in directory {directory}. Allowed formats: {formats}")
        return [make(*train, shuffle, "training "), make(*val, False, "validation ")]
    paths, labels = split(paths, labels, validation_split, subset)
    return make(paths, labels, shuffle)
