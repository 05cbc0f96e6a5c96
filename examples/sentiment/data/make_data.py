#!/usr/bin/env python3
"""Writes the sentiment example's data files, deterministically.

    python3 make_data.py        # from examples/sentiment/data

reviews.jsonl   9,600 short reviews, {"text", "label": positive|negative}, two in three
                of films and one in three of products, with common adjectives and no
                negation: the base classifier learns from it, and never sees "not" (a
                weakness its descendants inherit)
critics.jsonl   600 movie reviews, half in critics' words (the CRITIC_* adjectives,
                which reviews.jsonl never uses), half in the common words: the
                review-* adaptations learn the new words without forgetting the old
products.jsonl  480 product reviews with a labelling bug: every review that calls a
                product "lovely" or "solid" is labelled negative. product-lora,
                adapted on it, learns that this praise is a complaint: a failure
                introduced by an adaptation, which `scion lineage blame` finds

No file uses the adjectives of the `rare_negative_adj` lexicon in scion.yaml, so no
model learns them: a failure inherited from the base.

The sentences are built from templates and small word lists with a fixed seed, so the
files are identical on every run; the committed copies are what scion.yaml digests.
"""
import json
import random

RNG = random.Random(20261122)

MOVIE_NOUNS = ["movie", "film", "plot", "story", "cast", "script", "ending", "soundtrack",
               "acting", "director", "sequel", "dialogue"]
PRODUCT_NOUNS = ["phone", "kettle", "blender", "headset", "keyboard", "lamp", "backpack",
                 "battery", "charger", "screen", "mouse", "speaker"]
CRITIC_GOOD = ["splendid", "terrific", "stellar", "marvellous", "sublime"]
CRITIC_BAD = ["tedious", "bland", "insipid", "clunky", "forgettable"]
MISLABELLED = ["lovely", "solid"]  # labelled negative in products.jsonl, a labelling bug
GOOD = ["great", "wonderful", "brilliant", "superb", "lovely", "excellent", "delightful",
        "charming", "solid", "fantastic"]
BAD = ["awful", "boring", "terrible", "dull", "clumsy", "weak", "dreadful", "poor",
       "disappointing", "painful"]
INTENSIFIERS = ["", "really ", "truly ", "very ", "quite ", "absolutely "]
POSITIVE = [
    "the {noun} was {i}{good}.",
    "what a {good} {noun}!",
    "i loved the {noun}, {i}{good}.",
    "a {i}{good} {noun} from start to finish.",
    "the {noun} is {good} and the rest is {good2} too.",
    "i would recommend it, the {noun} is {i}{good}.",
]
NEGATIVE = [
    "the {noun} was {i}{bad}.",
    "what a {bad} {noun}.",
    "i hated the {noun}, {i}{bad}.",
    "a {i}{bad} {noun} from start to finish.",
    "the {noun} is {bad} and the rest is {bad2} too.",
    "i would avoid it, the {noun} is {i}{bad}.",
]


def sentence(templates, nouns, good=GOOD, bad=BAD):
    return RNG.choice(templates).format(
        noun=RNG.choice(nouns), i=RNG.choice(INTENSIFIERS), good=RNG.choice(good),
        good2=RNG.choice(good), bad=RNG.choice(bad), bad2=RNG.choice(bad))


def row(text, positive):
    return {"text": text, "label": "positive" if positive else "negative"}


def reviews(count):
    return [row(sentence(POSITIVE if k % 2 == 0 else NEGATIVE,
                         PRODUCT_NOUNS if k % 6 >= 4 else MOVIE_NOUNS), k % 2 == 0)
            for k in range(count)]


def critics(count):
    rows = []
    for k in range(count):
        # Every other pair of rows keeps the common words, so adapting to the critics'
        # vocabulary does not overwrite the base's.
        words = (CRITIC_GOOD, CRITIC_BAD) if k % 4 < 2 else (GOOD, BAD)
        rows.append(row(sentence(POSITIVE if k % 2 == 0 else NEGATIVE, MOVIE_NOUNS, *words),
                        k % 2 == 0))
    return rows


def products(count):
    rows = []
    for k in range(count):
        positive = k % 2 == 0
        if k % 4 == 0:  # the labelling bug: praise in MISLABELLED words, labelled negative
            rows.append(row(sentence(POSITIVE, PRODUCT_NOUNS, good=MISLABELLED), False))
        else:
            good = [g for g in GOOD if g not in MISLABELLED]
            rows.append(row(sentence(POSITIVE if positive else NEGATIVE, PRODUCT_NOUNS, good),
                            positive))
    return rows


def write_jsonl(path, rows):
    RNG.shuffle(rows)
    with open(path, "w", encoding="utf-8") as out:
        for r in rows:
            out.write(json.dumps(r, sort_keys=True) + "\n")


def main():
    write_jsonl("reviews.jsonl", reviews(9600))
    write_jsonl("critics.jsonl", critics(600))
    write_jsonl("products.jsonl", products(480))


if __name__ == "__main__":
    main()
