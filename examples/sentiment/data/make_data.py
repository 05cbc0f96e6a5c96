#!/usr/bin/env python3
"""Writes the sentiment example's data files, deterministically.

    python3 make_data.py        # from examples/sentiment/data

reviews.jsonl   200 short movie reviews, {"text", "label": positive|negative}
products.jsonl  120 short product reviews, same labels (a second domain, for a
                descendant adapted from the movie-review model)
corpus.txt      600 lines of plain review-like English for masked-LM pretraining

The sentences are built from templates and small word lists with a fixed seed, so the
files are identical on every run; the committed copies are what scion.yaml digests.
"""
import json
import random

RNG = random.Random(20261122)

MOVIE_NOUNS = ["movie", "film", "plot", "story", "cast", "script", "ending", "soundtrack",
               "acting", "director", "sequel", "dialogue"]
PRODUCT_NOUNS = ["phone", "charger", "kettle", "blender", "headset", "keyboard", "lamp",
                 "backpack", "battery", "screen", "mouse", "speaker"]
GOOD = ["great", "wonderful", "brilliant", "superb", "lovely", "excellent", "delightful",
        "charming", "solid", "fantastic"]
BAD = ["awful", "boring", "terrible", "dull", "clumsy", "weak", "dreadful", "poor",
       "disappointing", "painful"]
INTENSIFIERS = ["", "really ", "truly ", "very ", "quite ", "absolutely "]
POSITIVE_TEMPLATES = [
    "the {noun} was {i}{good}.",
    "what a {good} {noun}!",
    "i loved the {noun}, {i}{good}.",
    "a {i}{good} {noun} from start to finish.",
    "the {noun} is {good} and the rest is {good2} too.",
    "not bad at all, the {noun} was {good}.",
    "i would recommend it, the {noun} is {i}{good}.",
]
NEGATIVE_TEMPLATES = [
    "the {noun} was {i}{bad}.",
    "what a {bad} {noun}.",
    "i hated the {noun}, {i}{bad}.",
    "a {i}{bad} {noun} from start to finish.",
    "the {noun} is {bad} and the rest is {bad2} too.",
    "not good at all, the {noun} was {bad}.",
    "i would not recommend it, the {noun} is {i}{bad}.",
]
NEUTRAL_TEMPLATES = [
    "the {noun} runs for about two hours.",
    "we watched the {noun} on a rainy evening.",
    "the {noun} arrived in a small box on monday.",
    "my friend told me about the {noun} last week.",
    "there is a {noun} on the table next to the window.",
    "the {noun} reminded me of something i saw years ago.",
]


def sentence(templates, nouns):
    return RNG.choice(templates).format(
        noun=RNG.choice(nouns), i=RNG.choice(INTENSIFIERS), good=RNG.choice(GOOD),
        good2=RNG.choice(GOOD), bad=RNG.choice(BAD), bad2=RNG.choice(BAD))


def labelled(count, nouns):
    rows = []
    for k in range(count):
        positive = k % 2 == 0
        text = sentence(POSITIVE_TEMPLATES if positive else NEGATIVE_TEMPLATES, nouns)
        rows.append({"text": text, "label": "positive" if positive else "negative"})
    RNG.shuffle(rows)
    return rows


def write_jsonl(path, rows):
    with open(path, "w", encoding="utf-8") as out:
        for row in rows:
            out.write(json.dumps(row, sort_keys=True) + "\n")


def main():
    write_jsonl("reviews.jsonl", labelled(200, MOVIE_NOUNS))
    write_jsonl("products.jsonl", labelled(120, PRODUCT_NOUNS))
    all_templates = POSITIVE_TEMPLATES + NEGATIVE_TEMPLATES + NEUTRAL_TEMPLATES
    with open("corpus.txt", "w", encoding="utf-8") as out:
        for _ in range(600):
            out.write(sentence(all_templates, MOVIE_NOUNS + PRODUCT_NOUNS) + "\n")


if __name__ == "__main__":
    main()
