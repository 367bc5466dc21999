"""Cards: the documented integer id, text codes, glyphs and parse errors."""

from __future__ import annotations

import pytest

from games.cards import Card, CardParseError, Rank, Suit, full_deck, glyphs, parse_cards


def test_full_deck_has_52_distinct_cards_in_id_order() -> None:
    deck = full_deck()
    assert len(deck) == 52
    assert len(set(deck)) == 52
    assert [card.id for card in deck] == list(range(52))


def test_card_id_is_rank_minus_two_times_four_plus_suit_index() -> None:
    for rank in Rank:
        for index, suit in enumerate((Suit.CLUBS, Suit.DIAMONDS, Suit.HEARTS, Suit.SPADES)):
            assert Card(rank, suit).id == (rank - 2) * 4 + index


@pytest.mark.parametrize(
    ("code", "card_id"), [("2c", 0), ("2d", 1), ("2h", 2), ("2s", 3), ("3c", 4), ("Ah", 50)]
)
def test_documented_ids(code: str, card_id: int) -> None:
    assert Card.parse(code).id == card_id
    assert str(Card.from_id(card_id)) == code


def test_id_text_and_parse_round_trip_for_every_card() -> None:
    for card in full_deck():
        assert Card.from_id(card.id) == card
        assert Card.parse(str(card)) == card
        assert Card.parse(card.glyph[0] + card.suit.value) == card


def test_glyphs_use_suit_symbols() -> None:
    assert Card.parse("Td").glyph == "T♦"
    assert Card.parse("As").glyph == "A♠"
    assert glyphs(parse_cards("2c Kh")) == "2♣ K♥"


@pytest.mark.parametrize(
    ("text", "expected"),
    [("10h", "Th"), ("ah", "Ah"), ("KD", "Kd"), ("  qs ", "Qs"), ("10c", "Tc")],
)
def test_parse_accepts_ten_as_10_any_case_and_surrounding_spaces(text: str, expected: str) -> None:
    assert str(Card.parse(text)) == expected


@pytest.mark.parametrize("text", ["", " ", "A", "1h", "11h", "0s", "Ax", "Ahh", "A h", "♠A", "Zz"])
def test_parse_rejects_what_is_not_a_card_with_a_clear_error(text: str) -> None:
    with pytest.raises(CardParseError, match="not a card"):
        Card.parse(text)


def test_card_parse_error_is_a_value_error() -> None:
    assert issubclass(CardParseError, ValueError)


@pytest.mark.parametrize("card_id", [-1, 52, 100])
def test_from_id_rejects_ids_outside_0_to_51(card_id: int) -> None:
    with pytest.raises(CardParseError, match=r"0\.\.51"):
        Card.from_id(card_id)


def test_parse_cards_accepts_spaces_and_commas() -> None:
    assert parse_cards("Ah, Kd 2c") == (Card.parse("Ah"), Card.parse("Kd"), Card.parse("2c"))
    assert parse_cards("") == ()


def test_parse_cards_names_the_bad_token() -> None:
    with pytest.raises(CardParseError, match="'Xx'"):
        parse_cards("Ah Xx")


def test_cards_order_by_rank_then_suit() -> None:
    assert sorted(full_deck(), reverse=True)[0] == Card.parse("As")
    assert Card.parse("2s") < Card.parse("3c")
    assert Card.parse("Kc") < Card.parse("Kd")


def test_cards_are_frozen_values() -> None:
    card = Card.parse("Ah")
    with pytest.raises(AttributeError):
        card.rank = Rank.TWO  # type: ignore[misc]
    assert card == Card(Rank.ACE, Suit.HEARTS)
    assert hash(card) == hash(Card(Rank.ACE, Suit.HEARTS))
    assert repr(card) == "Card('Ah')"
