"""Operators the GPU tests run every primitive with (a module of their own, so that their source can be read)."""


def add(a, b):
    return a + b


def twice(x):
    return x + x


def positive(x):
    return x > 0


def last(a, b):
    """Associative, not commutative: a fold of it is its last item, so the order of items shows."""
    return b


def last_marked(a, b):
    """The last item (of a record with an ``index``) whose index is a multiple of 7, else the first: associative,
    not commutative."""
    return b if b.index % 7 == 0 else a
