"""Keras' serialize/deserialize pair for a catalogue of classes (keras.losses, keras.metrics):
{"module", "class_name", "config", "registered_name"} dicts, read back by class name."""


def serialization(module, kind, by_class_name, get):
    """(serialize, deserialize) for the classes of `module` ("keras.losses"); `get` reads a
    name given instead of a dict."""
    def serialize(obj):
        if not hasattr(obj, "get_config"):
            raise ValueError(f"Cannot serialize {obj!r}: it has no get_config()")
        return {"module": module, "class_name": type(obj).__name__, "config": obj.get_config(), "registered_name": None}

    def deserialize(config, custom_objects=None):
        if isinstance(config, str):
            return get(config)
        name = config.get("class_name")
        cls = (custom_objects or {}).get(name) or by_class_name.get(name)
        if cls is None:
            raise ValueError(f"Could not interpret {kind} identifier: {config!r}")
        return cls.from_config(dict(config.get("config", {})))

    serialize.__doc__ = f"Keras' serialize: the dict of a {kind} object."
    deserialize.__doc__ = f"Keras' deserialize: a {kind} object from serialize()'s dict (or a name)."
    return serialize, deserialize
