"""Writes train.tsv and dev.tsv: short product reviews composed from the word lists below
(written for this project), labelled negative or positive. Rerun to regenerate them exactly.

    python demo/data/reviews/write_reviews.py
"""

import os
import random

PRODUCTS = [
    "blender",
    "kettle",
    "backpack",
    "lamp",
    "phone case",
    "umbrella",
    "desk chair",
    "toaster",
    "jacket",
    "water bottle",
    "tent",
    "keyboard",
    "frying pan",
    "bicycle bell",
    "alarm clock",
]
GOOD = [
    "sturdy",
    "reliable",
    "comfortable",
    "quiet",
    "well made",
    "easy to use",
    "worth the money",
    "lovely",
    "excellent",
    "solid",
    "handy",
    "great",
]
BAD = [
    "flimsy",
    "noisy",
    "uncomfortable",
    "cheaply made",
    "hard to use",
    "a waste of money",
    "disappointing",
    "useless",
    "awful",
    "broken",
    "fragile",
    "terrible",
]
GOOD_EVENTS = [
    "it still works perfectly after a year",
    "my whole family loves it",
    "I would buy it again",
    "it arrived early and well packed",
    "it does exactly what it promises",
    "I use it every day",
]
BAD_EVENTS = [
    "it stopped working after a week",
    "I sent it back the next day",
    "the seller never answered",
    "it arrived scratched and late",
    "it does not do what it promises",
    "it broke the first time I used it",
]
OPENERS = ["Honestly,", "To be fair,", "After a month,", "For the price,", "", "", "Well,", "In short,"]


def review(rng, positive):
    product = rng.choice(PRODUCTS)
    words, events, other = (GOOD, GOOD_EVENTS, BAD) if positive else (BAD, BAD_EVENTS, GOOD)
    opener = rng.choice(OPENERS)
    shapes = [
        f"{opener} this {product} is {rng.choice(words)} and {rng.choice(words)}.",
        f"{opener} the {product} is {rng.choice(words)}; {rng.choice(events)}.",
        f"I thought the {product} would be {rng.choice(other)}, but it is {rng.choice(words)}.",
        f"{rng.choice(events).capitalize()}, so this {product} is {rng.choice(words)}.",
        f"Not {rng.choice(other)} at all: a {rng.choice(words)} {product}.",
    ]
    return " ".join(rng.choice(shapes).split())


def main():
    rng = random.Random(20261201)
    here = os.path.dirname(os.path.abspath(__file__))
    for split, count in (("train", 320), ("dev", 120)):
        rows = []
        for index in range(count):
            positive = index % 2 == 1
            rows.append(f"{review(rng, positive)}\t{'positive' if positive else 'negative'}")
        rng.shuffle(rows)
        with open(os.path.join(here, f"{split}.tsv"), "w", encoding="utf-8") as writer:
            writer.write("sentence\tlabel\n" + "\n".join(rows) + "\n")


if __name__ == "__main__":
    main()
