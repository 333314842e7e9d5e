"""ef.keras.preprocessing.text: tf.keras' legacy text tools (Tokenizer, text_to_word_sequence,
one_hot, hashing_trick, tokenizer_from_json), with their word splitting and index rules; new
programs use ef.keras.layers.TextVectorization."""
import collections
import hashlib
import json

import numpy as np

FILTERS = '!"#$%&()*+,-./:;<=>?@[\\]^_`{|}~\t\n'


def text_to_word_sequence(input_text, filters=FILTERS, lower=True, split=" "):
    """The words of a text: lowercased, each character of filters turned into a separator."""
    if lower:
        input_text = input_text.lower()
    input_text = input_text.translate(str.maketrans({c: split for c in filters}))
    return [w for w in input_text.split(split) if w]


def hashing_trick(text, n, hash_function=None, filters=FILTERS, lower=True, split=" ", analyzer=None):
    """Each word hashed into 1..n-1 (0 is kept for padding): hash_function(word) % (n - 1) + 1,
    with Python's hash (salted per process) by default or "md5"."""
    if hash_function is None:
        hash_function = hash
    elif hash_function == "md5":
        def hash_function(w):
            return int(hashlib.md5(w.encode()).hexdigest(), 16)
    words = text_to_word_sequence(text, filters=filters, lower=lower, split=split) if analyzer is None \
        else analyzer(text)
    return [hash_function(w) % (n - 1) + 1 for w in words]


def one_hot(input_text, n, filters=FILTERS, lower=True, split=" ", analyzer=None):
    """hashing_trick with Python's hash."""
    return hashing_trick(input_text, n, hash_function=hash, filters=filters, lower=lower, split=split,
                         analyzer=analyzer)


class Tokenizer:
    """Word (or character) indices by frequency: fit_on_texts counts the words, the most
    frequent gets index 1 (after oov_token, which is 1 when given; 0 is never a word);
    texts_to_sequences / sequences_to_texts / texts_to_matrix use the num_words - 1 most
    frequent."""

    def __init__(self, num_words=None, filters=FILTERS, lower=True, split=" ", char_level=False, oov_token=None,
                 analyzer=None, **kwargs):
        if "nb_words" in kwargs:
            num_words = kwargs.pop("nb_words")
        document_count = kwargs.pop("document_count", 0)
        if kwargs:
            raise TypeError(f"Unrecognized keyword arguments: {kwargs}")
        self.word_counts = collections.OrderedDict()
        self.word_docs = collections.defaultdict(int)
        self.index_docs = collections.defaultdict(int)
        self.filters, self.split, self.lower = filters, split, lower
        self.num_words, self.document_count = num_words, document_count
        self.char_level, self.oov_token, self.analyzer = char_level, oov_token, analyzer
        self.word_index, self.index_word = {}, {}

    def _tokens(self, text):
        if self.char_level or isinstance(text, list):
            if self.lower:
                text = [t.lower() for t in text] if isinstance(text, list) else text.lower()
            return text
        if self.analyzer is not None:
            return self.analyzer(text)
        return text_to_word_sequence(text, filters=self.filters, lower=self.lower, split=self.split)

    def fit_on_texts(self, texts):
        for text in texts:
            self.document_count += 1
            tokens = self._tokens(text)
            for w in tokens:
                self.word_counts[w] = self.word_counts.get(w, 0) + 1
            for w in set(tokens):
                self.word_docs[w] += 1
        # Most frequent first; ties keep first-seen order (a stable sort)
        by_count = sorted(self.word_counts.items(), key=lambda wc: wc[1], reverse=True)
        vocabulary = ([] if self.oov_token is None else [self.oov_token]) + [w for w, _ in by_count]
        self.word_index = {w: i for i, w in enumerate(vocabulary, start=1)}
        self.index_word = {i: w for w, i in self.word_index.items()}
        for w, c in list(self.word_docs.items()):
            self.index_docs[self.word_index[w]] = c

    def fit_on_sequences(self, sequences):
        self.document_count += len(sequences)
        for seq in sequences:
            for i in set(seq):
                self.index_docs[i] += 1

    def texts_to_sequences(self, texts):
        return list(self.texts_to_sequences_generator(texts))

    def texts_to_sequences_generator(self, texts):
        oov = self.word_index.get(self.oov_token)
        for text in texts:
            out = []
            for w in self._tokens(text):
                i = self.word_index.get(w)
                if i is not None:
                    if self.num_words and i >= self.num_words:
                        if oov is not None:
                            out.append(oov)
                    else:
                        out.append(i)
                elif self.oov_token is not None:
                    out.append(oov)
            yield out

    def sequences_to_texts(self, sequences):
        return list(self.sequences_to_texts_generator(sequences))

    def sequences_to_texts_generator(self, sequences):
        oov = self.word_index.get(self.oov_token)
        for seq in sequences:
            words = []
            for num in seq:
                word = self.index_word.get(num)
                if word is not None:
                    if self.num_words and num >= self.num_words:
                        if oov is not None:
                            words.append(self.index_word[oov])
                    else:
                        words.append(word)
                elif self.oov_token is not None:
                    words.append(self.index_word[oov])
            yield " ".join(words)

    def texts_to_matrix(self, texts, mode="binary"):
        return self.sequences_to_matrix(self.texts_to_sequences(texts), mode=mode)

    def sequences_to_matrix(self, sequences, mode="binary"):
        """[len(sequences), num_words] float64: "binary" presence, "count", "freq" (count / length)
        or "tfidf" ((1 + log count) * log(1 + documents / (1 + documents with the word)))."""
        if self.num_words:
            width = self.num_words
        elif self.word_index:
            width = len(self.word_index) + 1
        else:
            raise ValueError("Specify a dimension (`num_words` argument), or fit on some text data first.")
        if mode == "tfidf" and not self.document_count:
            raise ValueError("Fit the Tokenizer on some data before using tfidf mode.")
        if mode not in ("binary", "count", "freq", "tfidf"):
            raise ValueError("Unknown vectorization mode:", mode)
        x = np.zeros((len(sequences), width))
        for row, seq in enumerate(sequences):
            if not seq:
                continue
            counts = collections.Counter(j for j in seq if j < width)
            for j, c in counts.items():
                if mode == "count":
                    x[row][j] = c
                elif mode == "freq":
                    x[row][j] = c / len(seq)
                elif mode == "binary":
                    x[row][j] = 1
                else:
                    x[row][j] = (1 + np.log(c)) * np.log(1 + self.document_count / (1 + self.index_docs.get(j, 0)))
        return x

    def get_config(self):
        return {"num_words": self.num_words, "filters": self.filters, "lower": self.lower, "split": self.split,
                "char_level": self.char_level, "oov_token": self.oov_token, "document_count": self.document_count,
                "word_counts": json.dumps(self.word_counts), "word_docs": json.dumps(self.word_docs),
                "index_docs": json.dumps(self.index_docs), "index_word": json.dumps(self.index_word),
                "word_index": json.dumps(self.word_index)}

    def to_json(self, **kwargs):
        return json.dumps({"class_name": type(self).__name__, "config": self.get_config()}, **kwargs)


def tokenizer_from_json(json_string):
    """The Tokenizer that Tokenizer.to_json() wrote."""
    config = json.loads(json_string).get("config")
    word_counts = json.loads(config.pop("word_counts"))
    word_docs = json.loads(config.pop("word_docs"))
    index_docs = {int(k): v for k, v in json.loads(config.pop("index_docs")).items()}
    index_word = {int(k): v for k, v in json.loads(config.pop("index_word")).items()}
    word_index = json.loads(config.pop("word_index"))
    tokenizer = Tokenizer(**config)
    tokenizer.word_counts, tokenizer.word_docs, tokenizer.index_docs = word_counts, word_docs, index_docs
    tokenizer.word_index, tokenizer.index_word = word_index, index_word
    return tokenizer


__all__ = ["Tokenizer", "hashing_trick", "one_hot", "text_to_word_sequence", "tokenizer_from_json"]
