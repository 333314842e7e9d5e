"""String tensors and tf.strings as a TF user writes them: values, dtypes and errors as TF 2.21
gives them (its numbers are written here), eager == traced."""
import numpy as np
import pytest

import eagerflow as tf


def test_string_tensors_from_python_and_numpy():
    s = tf.constant("hi")
    assert s.dtype == tf.string and s.shape == ()
    assert s.numpy() == b"hi"
    v = tf.constant(["a", "héllo"])
    out = v.numpy()
    assert out.dtype == object and out.tolist() == [b"a", "héllo".encode()]
    assert tf.constant(np.array([b"x", b"yz"])).numpy().tolist() == [b"x", b"yz"]
    assert tf.constant(np.array([["p", "q"]])).shape == (1, 2)
    assert tf.convert_to_tensor(np.array(["u", b"v"], dtype=object)).numpy().tolist() == [b"u", b"v"]
    assert tf.string.name == "string" and tf.string.as_numpy_dtype is np.dtype(object).type or \
        tf.string.as_numpy_dtype == np.dtype(object)


def test_repr_and_str_as_tf():
    assert repr(tf.constant("hi")) == "<tf.Tensor: shape=(), dtype=string, numpy=b'hi'>"
    assert repr(tf.constant(["a", "b"])) == \
        "<tf.Tensor: shape=(2,), dtype=string, numpy=array([b'a', b'b'], dtype=object)>"
    assert str(tf.constant(["a", "b"])) == "tf.Tensor([b'a' b'b'], shape=(2,), dtype=string)"


def test_moving_ops_take_strings_and_math_refuses_them():
    t = tf.constant([["a", "b", "c"], ["d", "e", "f"]])
    assert tf.transpose(t).numpy().tolist() == [[b"a", b"d"], [b"b", b"e"], [b"c", b"f"]]
    assert tf.reshape(t, [-1])[2:].numpy().tolist() == [b"c", b"d", b"e", b"f"]
    assert tf.gather(tf.reshape(t, [-1]), [5, 0]).numpy().tolist() == [b"f", b"a"]
    assert tf.concat([t, t], 0).shape == (4, 3)
    assert tf.stack([t[0], t[1]]).numpy().tolist() == t.numpy().tolist()
    assert (tf.constant("a") + "b").numpy() == b"ab"  # TF's add concatenates strings
    assert (tf.constant(["a", "b"]) == "b").numpy().tolist() == [False, True]
    assert (tf.constant(["a", "b"]) != tf.constant(["a", "c"])).numpy().tolist() == [False, True]
    with pytest.raises((tf.errors.InvalidArgumentError, TypeError)):
        tf.constant("a") + 1
    with pytest.raises((tf.errors.InvalidArgumentError, TypeError)):
        tf.reduce_sum(tf.constant(["1"]))
    with pytest.raises((tf.errors.InvalidArgumentError, TypeError, tf.errors.UnimplementedError)):
        tf.cast(tf.constant("1"), tf.float32)


def test_case_strip_length():
    t = tf.constant(["  Hello World ", "\tABC def\n"])
    assert tf.strings.lower(t).numpy().tolist() == [b"  hello world ", b"\tabc def\n"]
    assert tf.strings.upper(t).numpy().tolist() == [b"  HELLO WORLD ", b"\tABC DEF\n"]
    assert tf.strings.strip(t).numpy().tolist() == [b"Hello World", b"ABC def"]
    assert tf.strings.length(t).numpy().tolist() == [14, 9]
    assert tf.strings.length(t).dtype == tf.int32
    assert tf.strings.length(["héllo"], unit="UTF8_CHAR").numpy().tolist() == [5]
    with pytest.raises(ValueError):
        tf.strings.length(t, unit="WORDS")


def test_regexes():
    t = tf.constant(["abc123", "abc", "123"])
    assert tf.strings.regex_full_match(t, r"[a-z]+\d*").numpy().tolist() == [True, True, False]
    assert tf.strings.regex_replace(["abc123"], r"(\d)", r"<\1>").numpy().tolist() == [b"abc<1><2><3>"]
    assert tf.strings.regex_replace(t, r"\d", "#", replace_global=False).numpy().tolist() == [b"abc#23", b"abc", b"#23"]
    with pytest.raises(tf.errors.InvalidArgumentError, match="invalid pattern"):
        tf.strings.regex_full_match(["a"], "(")


def test_to_number_and_as_string_as_tf():
    np.testing.assert_array_equal(tf.strings.to_number([" -7 ", "+2", "inf", "1e3"]).numpy(),
                                  np.array([-7, 2, np.inf, 1000], np.float32))
    assert tf.strings.to_number(["12"], out_type=tf.int64).dtype == tf.int64
    for bad, dtype in [("", tf.float32), ("1.5", tf.int32), ("abc", tf.float64)]:
        with pytest.raises(tf.errors.InvalidArgumentError, match="could not correctly convert string"):
            tf.strings.to_number([bad], dtype)
    assert tf.strings.as_string([1.5, -2.0]).numpy().tolist() == [b"1.500000", b"-2.000000"]
    assert tf.strings.as_string([7, -12], width=4, fill="0").numpy().tolist() == [b"0007", b"-012"]
    assert tf.strings.as_string([True, False]).numpy().tolist() == [b"true", b"false"]
    assert tf.as_string([0.5], precision=2).numpy().tolist() == [b"0.50"]


def test_join_reduce_join_substr_format():
    assert tf.strings.join([["a", "b"], "-", ["x", "y"]], separator="+").numpy().tolist() == [b"a+-+x", b"b+-+y"]
    m = tf.constant([["a", "b"], ["c", "d"]])
    assert tf.strings.reduce_join(m, axis=0, separator=",").numpy().tolist() == [b"a,c", b"b,d"]
    assert tf.strings.reduce_join(m).numpy() == b"abcd"
    assert tf.strings.reduce_join(m, axis=1, keepdims=True).shape == (2, 1)
    assert tf.strings.substr(["Hello"], -2, 10).numpy().tolist() == [b"lo"]
    assert tf.strings.substr(["Hello", "World"], 1, 3).numpy().tolist() == [b"ell", b"orl"]
    with pytest.raises(tf.errors.InvalidArgumentError, match="out of range"):
        tf.strings.substr(["Hello"], 6, 1)
    assert tf.strings.format("x={} y={}", [tf.constant([1, 2, 3, 4, 5, 6, 7]), tf.constant("s")]).numpy() == \
        b'x=[1 2 3 ... 5 6 7] y="s"'
    assert tf.strings.format("{}", tf.constant(["a", "b"])).numpy() == b'["a" "b"]'
    assert tf.strings.unsorted_segment_join(["x", "y", "z"], [1, 0, 1], 3, separator=":").numpy().tolist() == \
        [b"y", b"x:z", b""]


def test_splits_are_ragged_as_tf():
    r = tf.strings.split(["a,,b", ""], sep=",")
    assert isinstance(r, tf.RaggedTensor)
    assert r.to_list() == [[b"a", b"", b"b"], [b""]]
    assert tf.strings.split(["  a b  c ", ""]).to_list() == [[b"a", b"b", b"c"], []]
    assert tf.strings.split(["  a b  c "], maxsplit=1).to_list() == [[b"a", b"b  c "]]
    assert tf.strings.split(["a,b,c"], sep=",", maxsplit=1).to_list() == [[b"a", b"b,c"]]
    scalar = tf.strings.split("a b")
    assert isinstance(scalar, tf.Tensor) and scalar.numpy().tolist() == [b"a", b"b"]
    assert tf.strings.unicode_split(["hé!"], "UTF-8").to_list() == [[b"h", "é".encode(), b"!"]]
    assert tf.strings.unicode_split([b"\xffx"], "UTF-8").to_list() == [[b"\xef\xbf\xbd", b"x"]]
    assert tf.strings.unicode_decode("hé", "UTF-8").numpy().tolist() == [104, 233]
    chars, offsets = tf.strings.unicode_decode_with_offsets(["hé€"], "UTF-8")
    assert chars.to_list() == [[104, 233, 8364]] and offsets.to_list() == [[0, 1, 3]]
    assert tf.strings.unicode_encode(tf.ragged.constant([[104, 233], [8364]]), "UTF-8").numpy().tolist() == \
        [b"h\xc3\xa9", "€".encode()]
    assert tf.strings.unicode_encode([[72, 105]], "UTF-8").numpy().tolist() == [b"Hi"]
    assert tf.strings.bytes_split("ab").numpy().tolist() == [b"a", b"b"]


def test_ngrams():
    assert tf.strings.ngrams(["a", "b", "c", "d"], 2).numpy().tolist() == [b"a b", b"b c", b"c d"]
    r = tf.strings.ngrams(tf.ragged.constant([["a", "b", "c"], ["d"]]), 2, pad_values="#")
    assert r.to_list() == [[b"# a", b"a b", b"b c", b"c #"], [b"# d", b"d #"]]


def test_hash_buckets_equal_tensorflows():
    t = tf.constant(["", "a", "hello", "The quick brown fox jumps over the lazy dog",
                     "x" * 100 + "tail of a long string that crosses 64 bytes"])
    n = 2 ** 62
    assert tf.strings.to_hash_bucket_fast(t, n).numpy().tolist() == [
        1936946117179621455, 3694432073954588131, 3786372426573024488, 3152101869897863476, 3762671648260766846]
    assert tf.strings.to_hash_bucket(t, n).numpy().tolist() == [
        105434511174508091, 2996632905371535868, 1331861223480393034, 1687480807060433122, 3169083096694817736]
    assert tf.strings.to_hash_bucket_strong(t, n, [1, 2]).numpy().tolist() == [
        443797209252341627, 546566331822570742, 2957200328589801622, 150232139108451824, 2881199295173499465]
    assert tf.strings.to_hash_bucket_fast(t, 10).dtype == tf.int64


def test_base64_is_web_safe():
    assert tf.io.encode_base64(["", "f", "fo"]).numpy().tolist() == [b"", b"Zg", b"Zm8"]
    assert tf.io.encode_base64(["f"], pad=True).numpy().tolist() == [b"Zg=="]
    data = tf.constant([b"\xfb\xff\x00", b"hello"])
    assert tf.io.decode_base64(tf.io.encode_base64(data)).numpy().tolist() == data.numpy().tolist()


def test_traced_equals_eager_and_traces_once_per_signature():
    traces = []

    @tf.function
    def f(x):
        traces.append(1)
        y = tf.strings.lower(tf.strings.regex_replace(x, " ", "_"))
        return tf.strings.join([y, tf.strings.as_string(tf.strings.length(y))], separator=":")

    out = f(tf.constant(["Ab c", "DE f"]))
    assert out.numpy().tolist() == [b"ab_c:4", b"de_f:4"]
    assert f(tf.constant(["X Y", "z"])).numpy().tolist() == [b"x_y:3", b"z:1"]
    assert len(traces) == 1


def test_strings_in_datasets():
    ds = tf.data.Dataset.from_tensor_slices(["a b", "c", "d e f"]).map(lambda s: tf.strings.length(s))
    assert [int(v) for v in ds] == [3, 1, 5]
    words = [w.numpy() for w in tf.data.Dataset.from_tensor_slices(tf.constant(["x", "y"]))]
    assert words == [b"x", b"y"]


def test_split_inside_a_traced_function_gives_ragged_values():
    @tf.function
    def words(lines):
        r = tf.strings.split(lines)
        return r.values, r.row_splits

    values, splits = words(tf.constant(["a b", "c d e"]))
    assert values.numpy().tolist() == [b"a", b"b", b"c", b"d", b"e"]
    assert splits.numpy().tolist() == [0, 2, 5]


def test_tf_print_writes_strings_as_tf(capsys):
    tf.print(tf.constant("hi there"))
    tf.print(tf.constant(["a", "b c"]))
    tf.print(tf.constant(b"\xff"))  # not UTF-8: escaped, not an error
    out = capsys.readouterr().out.splitlines()
    assert out[:2] == ["hi there", '["a" "b c"]']
    assert out[2] == "\\xff"
