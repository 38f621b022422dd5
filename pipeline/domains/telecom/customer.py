"""The scripted telecom customer: they hold the phone, do on it the one thing the agent asks, and say what it shows.

They open with the reason for the call and who they are. Each agent message that asks for something on the phone
becomes a call of the matching phone tool (one at a time); its result is then reported word for word, never
invented. When the agent says the issue is fixed they check the scenario's success condition themselves (the
speed test says Excellent, an MMS can be sent, the status bar shows a signal) and end with `###STOP###` when it
holds; a transfer ends with `###TRANSFER###`. Anything else gets a short, cooperative answer.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from pipeline.dataset import Task
from pipeline.rollout import EpisodeInfo, Message, Termination, ToolCall, UserReply

_CHECK = r"(check|look|see|tell me|what does|what do|show|run|try)"
_CHANGE = r"(turn|toggle|switch|enable|disable|grant|give|allow|set|change)"
MODES = {
    "4g_5g_preferred": r"4g_5g_preferred|4g/5g|5g",
    "4g_only": r"4g_only|4g only",
    "3g_only": r"3g",
    "2g_only": r"2g",
}
# (tool, patterns every one of which the agent's message must match), most specific first
RULES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("run_speed_test", (r"speed ?test",)),
    ("can_send_mms", (r"\bmms\b|picture message", r"send|try|check")),
    ("check_payment_request", (r"payment request", _CHECK)),
    ("make_payment", (r"\bpay\b|make (the|a) payment",)),
    ("reboot_device", (r"reboot|restart",)),
    ("reseat_sim_card", (r"re-?seat|reinsert|re-insert|take (the|your) sim",)),
    ("check_sim_status", (r"\bsim\b", _CHECK)),
    ("reset_apn_settings", (r"reset", r"\bapn\b")),
    ("check_apn_settings", (r"\bapn\b", _CHECK)),
    ("toggle_wifi_calling", (r"wi-?fi calling", _CHANGE)),
    ("check_wifi_calling_status", (r"wi-?fi calling", _CHECK)),
    ("toggle_airplane_mode", (r"airplane|flight mode", _CHANGE)),
    ("toggle_data_saver_mode", (r"data saver", _CHANGE)),
    ("check_data_restriction_status", (r"data saver|data restriction", _CHECK)),
    ("toggle_roaming", (r"roaming", _CHANGE)),
    ("disconnect_vpn", (r"\bvpn\b", r"disconnect|turn off|switch off")),
    ("check_vpn_status", (r"\bvpn\b", _CHECK)),
    ("set_network_mode_preference", (r"network mode|preferred network", _CHANGE)),
    ("check_network_mode_preference", (r"network mode|preferred network", _CHECK)),
    ("grant_app_permission", (r"permission", _CHANGE)),
    ("check_app_permissions", (r"permission", _CHECK)),
    ("toggle_data", (r"mobile data|cellular data", _CHANGE)),
    ("check_status_bar", (r"status bar",)),
    ("check_network_status", (r"network status|connection status|network settings",)),
)
_RESOLVED = re.compile(r"resolved|fixed|should (now )?work|working now|all set")
_TRANSFER = re.compile(r"transfer")


def requested_action(text: str) -> tuple[str, dict] | None:
    """The phone tool (and its arguments) an agent's message asks the customer to use, or None."""
    t = text.lower()
    for tool, patterns in RULES:
        if all(re.search(p, t) for p in patterns):
            return tool, _arguments(tool, t)
    return None


def _arguments(tool: str, t: str) -> dict:
    if tool == "set_network_mode_preference":
        return {"mode": next((m for m, p in MODES.items() if re.search(p, t)), "4g_5g_preferred")}
    if tool in ("grant_app_permission", "check_app_permissions"):
        app = "browser" if "browser" in t else "messaging"
        if tool == "check_app_permissions":
            return {"app_name": app}
        perm = next((p for p in ("storage", "sms", "phone", "network") if p in t), "storage")
        return {"app_name": app, "permission": perm}
    return {}


def success_check(task: Task) -> tuple[str, re.Pattern[str]]:
    """The phone tool the customer checks their goal with, and the result that means it is met."""
    goal = (task.user_script.goal or "").lower()
    if "mms" in goal or "picture" in goal:
        return "can_send_mms", re.compile(r"\bcan send")
    if "speed" in goal or "mobile data" in goal or "internet" in goal:
        return "run_speed_test", re.compile(r"\(Excellent\)")
    return "check_status_bar", re.compile(r"Signal: (?!No Signal)")


@dataclass
class TelecomCustomerEpisode:
    task: Task
    max_turns: int = 40
    turns: int = 0
    checking: bool = False
    calls: int = 0
    said: list[str] = field(default_factory=list)

    def _say(self, text: str, stop: bool = False, termination: Termination | None = None) -> UserReply:
        self.turns += 1
        return UserReply(content=text, stop=stop, termination=termination)

    def _call(self, tool: str, arguments: dict) -> UserReply:
        self.calls += 1
        return UserReply(content="", tool_calls=[ToolCall(id=f"phone_{self.calls}", name=tool, arguments=arguments)])

    def respond(self, messages: list[Message]) -> UserReply:
        if not messages:
            known = self.task.user_script.scenario.known_info if self.task.user_script.scenario else None
            return self._say(" ".join(x for x in (self.task.user_script.goal, known) if x))
        if self.turns >= self.max_turns:
            return self._say("I have to go now. ###STOP###", stop=True)
        last = messages[-1]
        if last.role == "tool":  # the result of my own call
            if self.checking:
                self.checking = False
                tool, ok = success_check(self.task)
                if ok.search(last.content or ""):
                    return self._say(f"It works now: {last.content} Thank you! ###STOP###", stop=True)
                return self._say(f"It is still not working. The phone says: {last.content}")
            return self._say(f"Done. The phone says: {last.content}")
        text = last.content or ""
        if _TRANSFER.search(text.lower()) and ("transferr" in text.lower() or "human" in text.lower()):
            return self._say("###TRANSFER###", stop=True, termination="user_transfer")
        if re.search(r"shall i|may i|would you like me|do you want me|can i go ahead", text.lower()):
            return self._say("Yes, please go ahead.")  # the agent's own action, asked for consent
        asked = requested_action(text)
        if asked is not None:
            return self._call(*asked)
        if _RESOLVED.search(text.lower()):
            self.checking = True
            return self._call(success_check(self.task)[0], {})
        info = self.task.user_script.known
        if re.search(r"phone number", text.lower()) and info.phone:
            return self._say(f"My phone number is {info.phone}.")
        if re.search(r"(would you like|do you want|okay\?|ok\?|agree)", text.lower()):
            return self._say("Yes, please go ahead.")
        return self._say("Okay.")


def start(info: EpisodeInfo) -> TelecomCustomerEpisode:
    return TelecomCustomerEpisode(info.task)
