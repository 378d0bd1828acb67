"""Operators the GPU tests run every primitive with (a module of their own, so that their source can be read)."""


def add(a, b):
    return a + b


def twice(x):
    return x + x


def positive(x):
    return x > 0
