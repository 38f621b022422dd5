"""The airline oracle's sentences: its questions, its confirmations and its reports.

Like the scripted kit's (`pipeline.agents.scripted.phrases`, whose closing and refusal sentences these reuse),
nothing here invents a figure: every amount or id is passed in by the caller, who took it from a tool result
or a user message. The policy's own figures (the bag fee, the insurance price) are never stated: an agent
states a price only once a tool has shown it (`calculate`).
"""

from __future__ import annotations

from pipeline.agents import ANYTHING_ELSE, YES_NO, money

ASK_USER_ID = "I'd be happy to help. First I need to identify you: what is your user id?"
ASK_USER_ID_FIRST = "Before I can do that, I need to identify you: what is your user id?"
ASK_RESERVATION = "Which reservation is this about? Please tell me the reservation id."
NOT_FOUND_USER = "I couldn't find a profile with that user id. Could you check it and tell me again?"
QUESTIONS = {
    "bags": "How many checked bags would you like in total?",
    "insurance": "Would you like travel insurance for this trip?",
    "payment_method": "Which payment method from your profile would you like to use for any difference?",
    "reason": "What is the reason for the cancellation: a change of plan, a flight the airline cancelled, or"
    " something else (for example health or weather)?",
}
TOPICS = {
    "book": ["bags", "insurance", "payment_method"],
    "cancel": ["reason"],
    "update_flights": ["payment_method"],
    "update_baggages": ["payment_method"],
}
VERBS = {
    "book": "book a reservation and update your profile with it",
    "cancel": "cancel reservation",
    "update_flights": "change the flights of reservation",
    "update_baggages": "update the checked bags of reservation",
    "update_passengers": "update the passengers of reservation",
    "send_certificate": "update your profile with a travel certificate for reservation",
}


PAY_FOR_BOOKING = "Which payment method from your profile would you like to pay with?"


def ask_details(intent: str, topics: list[str]) -> str:
    return " ".join(PAY_FOR_BOOKING if t == "payment_method" and intent == "book" else QUESTIONS[t] for t in topics)


def confirm(intent: str, record: str | None, lines: list[str]) -> str:
    """The action details, then an explicit yes/no question: the policy's confirmation step."""
    head = f"To confirm, I will {VERBS[intent]}" + (f" {record}" if record and intent != "book" else "") + ":"
    return f"{head} {' '.join(f'- {line}' for line in lines)} Shall I proceed {YES_NO}?"


def flights(segments: list[dict]) -> str:
    return ", ".join(f"{s['flight_number']} on {s['date']}" for s in segments)


def people(passengers: list[dict]) -> str:
    return ", ".join(f"{p['first_name']} {p['last_name']} ({p['dob']})" for p in passengers)


def report(name: str, rec: dict | str) -> str:
    """What was done, in figures taken from the tool's result only."""
    if name == "send_certificate":
        return f"Your profile has been updated: {rec} {ANYTHING_ELSE}"
    assert isinstance(rec, dict)  # every other tool's result is the reservation
    rid = rec["reservation_id"]
    if name == "book_reservation":
        paid = "; ".join(f"{money(p['amount'])} with {p['payment_id']}" for p in rec["payment_history"])
        text = f"Your reservation {rid} has been placed: {flights(rec['flights'])}, {rec['cabin']}, paid {paid}."
    elif name == "cancel_reservation":
        back = [p for p in rec["payment_history"] if p["amount"] < 0]
        money_back = "; ".join(f"{money(-p['amount'])} to {p['payment_id']}" for p in back)
        text = f"Reservation {rid} has been cancelled. Refunds: {money_back or 'none'}, within 5 to 7 business days."
    elif name == "update_reservation_flights":
        text = f"Reservation {rid} has been updated: its flights are now {flights(rec['flights'])}."
    elif name == "update_reservation_baggages":
        text = (
            f"Reservation {rid} has been updated: {rec['total_baggages']} checked bags, of which "
            f"{rec['nonfree_baggages']} paid."
        )
    else:
        text = f"Reservation {rid} has been updated: the passengers are now {people(rec['passengers'])}."
    return f"{text} {ANYTHING_ELSE}"
