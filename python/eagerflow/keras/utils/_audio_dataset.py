"""keras.utils.audio_dataset_from_directory: the .wav files under a folder (16-bit PCM) as
float32 [samples, channels] in [-1, 1) (tf.audio.decode_wav's values), labelled from their class
folders, in padded batches. The files are decoded by Python's wave module through a
generator (eagerflow has no WAV op), then pass the same shuffle buffer as Keras'."""
import wave

import numpy as np

from . import _directory


def decode_wav(path, desired_samples=-1):
    """float32 [samples, channels] of a 16-bit PCM WAV file (the only kind tf.audio.decode_wav
    reads), cut or zero-padded to desired_samples."""
    from ... import errors
    with wave.open(path, "rb") as w:
        channels, width, frames = w.getnchannels(), w.getsampwidth(), w.getnframes()
        raw = w.readframes(frames)
    if width != 2:
        raise errors.InvalidArgumentError(None, None, f"Can only read 16-bit WAV files, but received {8 * width} "
                                                      f"('{path}')")
    x = (np.frombuffer(raw, "<i2").astype(np.float32) / 32768.0).reshape(-1, channels)
    if desired_samples is not None and desired_samples >= 0:
        if len(x) >= desired_samples:
            x = x[:desired_samples]
        else:
            x = np.concatenate([x, np.zeros((desired_samples - len(x), channels), np.float32)])
    return x


def audio_dataset_from_directory(directory, labels="inferred", label_mode="int", class_names=None, batch_size=32,
                                 sampling_rate=None, output_sequence_length=None, ragged=False, shuffle=True, seed=None,
                                 validation_split=None, subset=None, follow_links=False, verbose=True):
    """Batches (audio float32 [batch, samples, channels], labels) of the .wav files in
    `directory`/<class>/...: each clip cut or zero-padded to output_sequence_length, or the
    batch padded to its longest clip; labels as image_dataset_from_directory."""
    import eagerflow as ef
    _directory.check_labels_arg(labels, class_names, "audio")
    _directory.check_label_mode(label_mode)
    if ragged and output_sequence_length is not None:
        raise ValueError("Cannot set both `ragged` and `output_sequence_length`")
    if ragged:
        raise NotImplementedError("audio_dataset_from_directory: ragged=True is not supported here; pad with "
                                  "output_sequence_length or let the batches pad to their longest clip")
    if sampling_rate is not None:
        if not isinstance(sampling_rate, int) or sampling_rate <= 0:
            raise ValueError(f"`sampling_rate` should be a positive integer. Received: sampling_rate={sampling_rate}")
        raise NotImplementedError("audio_dataset_from_directory: resampling (sampling_rate) needs tensorflow-io in "
                                  "Keras and is not supported here; resample the files beforehand")
    if labels is None or label_mode is None:
        labels, label_mode = None, None
    _directory.check_validation_split(validation_split, subset, shuffle, seed)
    if seed is None:
        seed = np.random.randint(1e6)
    paths, labels, class_names = _directory.index_directory(str(directory), labels, (".wav",), class_names, shuffle,
                                                            seed, follow_links, verbose)
    if label_mode == "binary" and len(class_names) != 2:
        raise ValueError(f'When passing `label_mode="binary"`, there must be exactly 2 class_names. Received: '
                         f"class_names={class_names}")
    num_classes = len(class_names) if class_names else 0
    length = -1 if output_sequence_length is None else int(output_sequence_length)

    def make(part_paths, part_labels, shuffled):
        if not part_paths:
            raise ValueError(f"No audio files found in directory {directory}. Allowed format(s): ('.wav',)")
        channels = decode_wav(part_paths[0]).shape[1]
        clips = ef.data.Dataset.from_generator(
            lambda: (decode_wav(p, length) for p in part_paths),
            output_signature=ef.TensorSpec([None if length < 0 else length, channels], ef.float32))
        ds = clips
        if label_mode:
            ds = ef.data.Dataset.zip((clips, _directory.labels_dataset(part_labels, label_mode, num_classes)))
        if shuffled:
            ds = ds.shuffle(batch_size * 8 if batch_size is not None else 1024, seed=seed)
        ds = ds.prefetch(ef.data.AUTOTUNE)
        if batch_size is not None:
            ds = ds.padded_batch(batch_size) if length < 0 else ds.batch(batch_size)
        return _directory.attach(ds, class_names=class_names)

    if subset == "both":
        train = _directory.split(paths, labels, validation_split, "training")
        val = _directory.split(paths, labels, validation_split, "validation")
        return make(*train, shuffle), make(*val, False)
    paths, labels = _directory.split(paths, labels, validation_split, subset)
    return make(paths, labels, shuffle)
