"""keras.utils.timeseries_dataset_from_array: sliding windows over an array as a batched
ef.data.Dataset; the windows are gathered in the pipeline, not materialized."""
import numpy as np


def _check(data, sequence_stride, sampling_rate, start_index, end_index):
    n = len(data)
    if start_index:
        if start_index < 0:
            raise ValueError(f"`start_index` must be 0 or greater. Received: start_index={start_index}")
        if start_index >= n:
            raise ValueError("`start_index` must be lower than the length of the data. Received: "
                             f"start_index={start_index}, for data of length {n}")
    if end_index:
        if start_index and end_index <= start_index:
            raise ValueError("`end_index` must be higher than `start_index`. Received: "
                             f"start_index={start_index}, and end_index={end_index} ")
        if end_index >= n:
            raise ValueError("`end_index` must be lower than the length of the data. Received: "
                             f"end_index={end_index}, for data of length {n}")
        if end_index <= 0:
            raise ValueError(f"`end_index` must be higher than 0. Received: end_index={end_index}")
    if sampling_rate <= 0:
        raise ValueError(f"`sampling_rate` must be higher than 0. Received: sampling_rate={sampling_rate}")
    if sampling_rate >= n:
        raise ValueError("`sampling_rate` must be lower than the length of the data. Received: "
                         f"sampling_rate={sampling_rate}, for data of length {n}")
    if sequence_stride <= 0:
        raise ValueError(f"`sequence_stride` must be higher than 0. Received: sequence_stride={sequence_stride}")
    if sequence_stride >= n:
        raise ValueError("`sequence_stride` must be lower than the length of the data. Received: "
                         f"sequence_stride={sequence_stride}, for data of length {n}")


def timeseries_dataset_from_array(data, targets, sequence_length, sequence_stride=1, sampling_rate=1, batch_size=128,
                                  shuffle=False, seed=None, start_index=None, end_index=None, format="tf"):
    """Batches of windows data[s : s + sequence_length * sampling_rate : sampling_rate] for
    the starts s = 0, sequence_stride, ... (relative to start_index), with targets[s] when
    targets is given, as Keras: the starts are shuffled by NumPy's RandomState(seed) when
    shuffle=True, and the windows then pass a shuffle buffer of batch_size * 8."""
    import eagerflow as ef
    _check(data, sequence_stride, sampling_rate, start_index, end_index)
    if format != "tf":
        raise ValueError(f'`format` should be "tf" here (an ef.data.Dataset). Received: format={format}')
    start = start_index or 0
    end = len(data) if end_index is None else end_index
    num_seqs = end - start - (sequence_length - 1) * sampling_rate
    if targets is not None:
        num_seqs = min(num_seqs, len(targets))
    index_dtype = "int32" if num_seqs < 2147483647 else "int64"
    starts = np.arange(0, max(num_seqs, 0), sequence_stride, dtype=index_dtype)
    if shuffle:
        if seed is None:
            seed = np.random.randint(1e6)
        np.random.RandomState(seed).shuffle(starts)
    steps = ef.convert_to_tensor(np.asarray(data[start:end]))
    offsets = np.arange(sequence_length, dtype=index_dtype) * np.asarray(sampling_rate, index_dtype)
    windows = ef.data.Dataset.from_tensor_slices(starts[:, None] + offsets[None, :])
    ds = windows.map(lambda idx: ef.gather(steps, idx))
    if targets is not None:
        target_steps = ef.convert_to_tensor(np.asarray(targets[start:end]))
        ds = ef.data.Dataset.zip((ds, ef.data.Dataset.from_tensor_slices(starts).map(
            lambda s: ef.gather(target_steps, s))))
    ds = ds.prefetch(ef.data.AUTOTUNE)
    if batch_size is not None:
        if shuffle:
            ds = ds.shuffle(batch_size * 8, seed=seed)
        return ds.batch(batch_size)
    return ds.shuffle(1024, seed=seed) if shuffle else ds
