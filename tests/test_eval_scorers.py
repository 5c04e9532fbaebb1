"""API-Bank, Bamboogle, ALFWorld and TravelPlanner scorers on hand-made cases (no benchmark data needed)."""

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from genenv_lab.evaluation import alfworld, api_bank, bamboogle, travelplanner as tp

SHARED = Path(__file__).resolve().parents[2] / "shared" / "benchmarks"

# ------------------------------------------------------------------------------------------------ API-Bank

ITEM = api_bank.ApiBankItem(id="level-1-0", category="level-1", instruction="", input="", dialogue_file="x",
                            expected_output="API-Request: [ModifyRegistration(appointment_id='34567890', "
                                            "new_appointment_date='2023-03-26', new_appointment_doctor='Dr. Lee')]",
                            api_name="ModifyRegistration",
                            params={"appointment_id": "34567890", "new_appointment_date": "2023-03-26",
                                    "new_appointment_doctor": "Dr. Lee"})


@pytest.mark.parametrize("prediction", [
    ITEM.expected_output,
    "Sure.\nAPI-Request: [ModifyRegistration(appointment_id='34567890', new_appointment_date='2023-03-26', "
    "new_appointment_doctor='dr.  lee')]",
    "[ModifyRegistration(new_appointment_doctor=\"Dr. Lee\", appointment_id=34567890, "
    "new_appointment_date='2023-03-26')]",
    json.dumps({"name": "ModifyRegistration", "arguments": ITEM.params}),
])
def test_api_bank_accepts_equivalent_calls(prediction):
    r = api_bank.score_item(ITEM, prediction)
    assert r.correct, r.reason


@pytest.mark.parametrize("prediction, reason", [
    ("API-Request: [CancelRegistration(appointment_id='34567890')]", "wrong API"),
    ("API-Request: [ModifyRegistration(appointment_id='34567890', new_appointment_date='2023-03-26')]",
     "parameter names differ"),
    ("API-Request: [ModifyRegistration(appointment_id='34567890', new_appointment_date='2023-03-27', "
     "new_appointment_doctor='Dr. Lee')]", "value of 'new_appointment_date' differs"),
    ("I need more information first.", "no API call found"),
])
def test_api_bank_rejects(prediction, reason):
    r = api_bank.score_item(ITEM, prediction)
    assert not r.correct and reason in r.reason


def test_api_bank_reads_the_first_request():
    assert api_bank.parse_api_request("API-Request: [A(x='1')] then [B(y='2')]") == ("A", {"x": "1"})


def test_api_bank_tolerates_the_gold_files_broken_quoting():
    text = ("API-Request: [RecordHealthData(user_id='12345', time='2023-10-13 09:30:00', "
            "health_data='[{'name': 'blood_pressure', 'value': '120/80'}]')]")
    name, params = api_bank.parse_api_request(text)
    assert name == "RecordHealthData"
    assert params == {"user_id": "12345", "time": "2023-10-13 09:30:00",
                      "health_data": "[{'name': 'blood_pressure', 'value': '120/80'}]"}


# ------------------------------------------------------------------------------------------------ Bamboogle

@pytest.mark.parametrize("output, answer", [
    ("So the answer is: James Madison.", "James Madison"),
    ("Reasoning...\nFinal answer: **Titan IIIE**", "Titan IIIE"),
    ("<think>hmm, maybe 1811</think><answer> 1812 </answer>", "1812"),
    ("The result is \\boxed{Jacob Freud}.", "Jacob Freud"),
    ("Let me think.\nCitibank was founded in 1812.\nJames Madison", "James Madison"),
    ("Answer:\n  \"Lockheed Corporation\"", "Lockheed Corporation"),
    ("", ""),
])
def test_bamboogle_answer_extraction(output, answer):
    assert bamboogle.extract_answer(output) == answer


def test_bamboogle_em_and_f1():
    item = bamboogle.BamboogleItem(id="bamboogle-0", category="test", question="q",
                                   answers=("March 30, 1971", "30 March 1971"))
    assert bamboogle.score_item(item, "Answer: march 30 1971").correct
    assert bamboogle.score_item(item, "Answer: 30 march, 1971.").correct      # second alias
    r = bamboogle.score_item(item, "Answer: March 31, 1971")
    assert not r.correct and 0 < r.score < 1
    assert bamboogle.normalize_answer("The Formation of Vegetable Mould") == "formation of vegetable mould"


@given(st.text(max_size=40), st.text(max_size=40))
def test_exact_match_implies_full_f1(pred, gold):
    if bamboogle.exact_match(pred, [gold]):
        assert bamboogle.f1_score(pred, [gold]) == 1.0
    assert 0.0 <= bamboogle.f1_score(pred, [gold]) <= 1.0


@given(st.text(max_size=60))
def test_normalize_answer_is_idempotent(text):
    once = bamboogle.normalize_answer(text)
    assert bamboogle.normalize_answer(once) == once


# ------------------------------------------------------------------------------------------------ ALFWorld

STEP = alfworld.AlfworldStep(id="g#4", category="plan_steps", game_id="g", task_type="pick_and_place_simple",
                             goal="Your task is to: put a mug in coffeemachine.", history=("go to desk 1",),
                             action="move mug 1 to coffeemachine 1")


@pytest.mark.parametrize("output, correct", [
    ("Action: move mug 1 to coffeemachine 1", True),
    ("Thought: I hold the mug.\nAction: put mug 1 in/on coffeemachine 1.", True),
    ("> Move Mug 1 to CoffeeMachine 1", True),
    ("move mug 1 to coffeemachine 1", True),
    ("Action: go to coffeemachine 1", False),
    ("", False),
])
def test_alfworld_action_scoring(output, correct):
    assert alfworld.score_item(STEP, output).correct is correct


@pytest.mark.skipif(not (SHARED / "alfworld").is_dir(), reason=f"offline benchmark data not found at {SHARED}")
def test_alfworld_games_and_plan_steps():
    games = alfworld.load_games(SHARED / "alfworld")
    assert len(games) == 134 and {g.task_type for g in games} == set(alfworld.TASK_TYPES)
    assert all(g.goal.startswith("Your task is to: ") and g.walkthrough for g in games)
    steps = alfworld.plan_steps(games[:2])
    assert steps[1].history == games[0].walkthrough[:1] and steps[1].action == games[0].walkthrough[1]


def test_alfworld_play_needs_the_engine(monkeypatch):
    monkeypatch.setattr(alfworld, "engine_available", lambda: False)
    with pytest.raises(RuntimeError, match="pip install alfworld"):
        alfworld.play_episodes(lambda transcript, admissible: "look", SHARED / "alfworld")
    if (SHARED / "alfworld").is_dir():
        assert alfworld.available_categories(SHARED / "alfworld") == ["plan_steps"]


@pytest.mark.skipif(not alfworld.engine_available(), reason="the 'alfworld' package is not installed "
                                                            "(pip install alfworld)")
@pytest.mark.skipif(not (SHARED / "alfworld").is_dir(), reason=f"offline benchmark data not found at {SHARED}")
def test_alfworld_engine_replay_and_play(tmp_path, monkeypatch):
    from genenv_lab.evaluation._alfworld_engine import observed_steps, play

    monkeypatch.setenv("HOME", str(tmp_path))        # replay cache
    game = alfworld.load_games(SHARED / "alfworld")[0]
    steps = observed_steps([game])
    assert len(steps) == len(game.walkthrough) and all(s.action in s.admissible for s in steps)
    assert steps[0].history[0].startswith("-= Welcome to TextWorld")
    expert = iter(game.walkthrough)
    assert play(lambda transcript, admissible: next(expert), [game], max_steps=20)["value"] == 1.0
    assert play(lambda transcript, admissible: "look", [game], max_steps=3)["value"] == 0.0


# ------------------------------------------------------------------------------------------------ TravelPlanner

SANDBOX = tp.Sandbox(
    restaurants={"Rockford": ["Coco Bambu", "Dial A Cake", "Flying Mango", "Cafe Southall", "Subway"]},
    attractions={"Rockford": ["Burpee Museum of Natural History", "Midway Village Museum"]},
    accommodations={"Rockford": [("Pure luxury one bdrm", 1.0), ("Long stay flat", 3.0)]},
    distances={("Boston", "Rockford"): ("15 hours 2 mins", "1,600 km"),
               ("Rockford", "Boston"): ("15 hours 2 mins", "1,600 km")},
    city_state={"Boston": "Massachusetts", "Rockford": "Illinois"})
QUESTION = {"org": "Boston", "dest": "Rockford", "days": 3, "visiting_city_number": 1}


def _plan(changes=None):
    plan = [
        {"days": 1, "current_city": "from Boston to Rockford",
         "transportation": "Self-driving, from Boston to Rockford, duration: 15 hours 2 mins, cost: 80",
         "breakfast": "-", "attraction": "-", "lunch": "-", "dinner": "Coco Bambu, Rockford",
         "accommodation": "Pure luxury one bdrm, Rockford"},
        {"days": 2, "current_city": "Rockford", "transportation": "-", "breakfast": "Dial A Cake, Rockford",
         "attraction": "Burpee Museum of Natural History, Rockford;Midway Village Museum, Rockford;",
         "lunch": "Flying Mango, Rockford", "dinner": "Cafe Southall, Rockford",
         "accommodation": "Pure luxury one bdrm, Rockford"},
        {"days": 3, "current_city": "from Rockford to Boston",
         "transportation": "Self-driving, from Rockford to Boston, duration: 15 hours 2 mins, cost: 80",
         "breakfast": "Subway, Rockford", "attraction": "-", "lunch": "-", "dinner": "-", "accommodation": "-"},
    ]
    for (day, key), value in (changes or {}).items():
        plan[day][key] = value
    return plan


def _checks(plan, question=QUESTION):
    item = tp.TravelItem(id="t", category="train", query="q", reference=None, question=question, gold_plan=None)
    return tp.run_checks(item, plan, SANDBOX)


def test_travelplanner_valid_plan_passes_every_check():
    assert all(ok for ok, _ in _checks(_plan()).values())


@pytest.mark.parametrize("changes, failing", [
    ({(1, "lunch"): "Coco Bambu, Rockford"}, "diverse_restaurants"),
    ({(1, "lunch"): "Nowhere Diner, Rockford"}, "within_sandbox"),
    ({(1, "attraction"): "Burpee Museum of Natural History, Rockford;Burpee Museum of Natural History, Rockford;"},
     "diverse_attractions"),
    ({(2, "transportation"): "Flight Number: F1, from Rockford to Boston"}, "non_conflicting_transport"),
    ({(0, "accommodation"): "Long stay flat, Rockford", (1, "accommodation"): "Long stay flat, Rockford"},
     "minimum_nights"),
    ({(0, "current_city"): "from Chicago to Rockford"}, "reasonable_city_route"),
    ({(1, "breakfast"): "-"}, "complete_information"),
])
def test_travelplanner_each_check_catches_its_violation(changes, failing):
    checks = _checks(_plan(changes))
    assert checks[failing][0] is False, checks[failing]


def test_travelplanner_structured_checks_need_the_query_fields():
    checks = _checks(_plan(), question=None)
    assert checks["reasonable_city_route"][0] is None and checks["complete_information"][0] is None
    assert checks["within_sandbox"][0] is True


@pytest.mark.parametrize("wrap", [
    lambda p: json.dumps(p), lambda p: repr(p), lambda p: "Here is the plan:\n```json\n" + json.dumps(p) + "\n```",
    lambda p: "Plan: " + json.dumps({"plan": p}) + " Enjoy!",
])
def test_travelplanner_plan_parsing(wrap):
    assert tp.parse_plan(wrap(_plan())) == _plan()
    assert tp.parse_plan("Sorry, I can't plan this trip.") is None
