"""ef.keras.preprocessing.sequence: pad_sequences (as keras.utils'), and tf.keras' legacy
word2vec helpers make_sampling_table and skipgrams."""
import random

import numpy as np

from ..utils import pad_sequences


def make_sampling_table(size, sampling_factor=1e-5):
    """p[i]: the probability of keeping the i-th most frequent word, word2vec's subsampling
    min(1, sqrt(f_i)) with f_i = sampling_factor * rank (log rank + gamma) + ... (Zipf's law)."""
    gamma = 0.577
    rank = np.arange(size)
    rank[0] = 1
    inv_frequency = rank * (np.log(rank) + gamma) + 0.5 - 1.0 / (12.0 * rank)
    f = sampling_factor * inv_frequency
    return np.minimum(1.0, f / np.sqrt(f))


def skipgrams(sequence, vocabulary_size, window_size=4, negative_samples=1.0, shuffle=True, categorical=False,
              sampling_table=None, seed=None):
    """(couples, labels): [word, context] pairs within window_size labelled 1 (word index 0
    skipped, words dropped by sampling_table), then negative_samples x as many [word, random
    word] pairs labelled 0; Python's global random, as tf.keras, so random.seed repeats them."""
    couples, labels = [], []
    for i, wi in enumerate(sequence):
        if not wi:
            continue
        if sampling_table is not None and sampling_table[wi] < random.random():
            continue
        for j in range(max(0, i - window_size), min(len(sequence), i + window_size + 1)):
            if j != i and sequence[j]:
                couples.append([wi, sequence[j]])
                labels.append([0, 1] if categorical else 1)
    if negative_samples > 0:
        n = int(len(labels) * negative_samples)
        words = [c[0] for c in couples]
        random.shuffle(words)
        couples += [[words[i % len(words)], random.randint(1, vocabulary_size - 1)] for i in range(n)]
        labels += ([[1, 0]] if categorical else [0]) * n
    if shuffle:
        if seed is None:
            seed = random.randint(0, 10e6)
        random.seed(seed)  # the same permutation for both lists
        random.shuffle(couples)
        random.seed(seed)
        random.shuffle(labels)
    return couples, labels


__all__ = ["make_sampling_table", "pad_sequences", "skipgrams"]
