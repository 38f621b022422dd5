"""The telecom oracle: troubleshoots by the workflow, with no model and without reading the task's answer.

It identifies the customer by the phone number they give, reads their line, and then works through the
technical-support workflow one step at a time: it asks the customer to check something on their phone, reads what
they report, and fixes what is wrong — on the carrier's side with its own tools (overdue bill paid through a
payment request, line resumed, roaming allowed, data refuelled), on the phone by asking the customer to do it.
In order: no service (line suspended, airplane mode, SIM, APN), then mobile data (roaming abroad, the data switch,
the allowance, then for speed: data saver, network mode, VPN), then MMS (network mode, Wi-Fi calling, the MMS
settings, the messaging app's permissions). A locked SIM or a suspended line whose contract has ended cannot be
fixed here: it transfers to a human agent. It then tells the customer the issue is resolved, once their check
passed.
"""

from __future__ import annotations

import json
import re

from pipeline.agents import ScriptedEpisode, Steps
from pipeline.domains.telecom.tools import TODAY
from pipeline.rollout import EpisodeInfo

PHONE_RE = re.compile(r"\b\d{3}-\d{3}-\d{4}\b")
ASK = {
    "check_network_status": "Could you check your network status and tell me what it shows?",
    "check_status_bar": "Could you check your status bar and tell me what it shows?",
    "check_apn_settings": "Could you check your APN settings?",
    "check_data_restriction_status": "Could you check whether Data Saver is on?",
    "check_network_mode_preference": "Could you check your network mode preference?",
    "check_vpn_status": "Could you check your VPN status?",
    "check_wifi_calling_status": "Could you check your Wi-Fi Calling status?",
    "check_app_permissions": "Could you check the permissions of your messaging app?",
    "check_payment_request": "Could you check the payment request I sent to your phone?",
    "run_speed_test": "Could you run a speed test?",
    "can_send_mms": "Could you try to send an MMS (picture message)?",
    "toggle_airplane_mode": "Please turn off airplane mode.",
    "reseat_sim_card": "Please reseat your SIM card: take it out and put it back in.",
    "reset_apn_settings": "Please reset your APN settings.",
    "reboot_device": "Please restart your phone.",
    "toggle_roaming": "Please turn on data roaming on your phone.",
    "toggle_data": "Please turn on mobile data.",
    "toggle_data_saver_mode": "Please turn off Data Saver.",
    "set_network_mode_preference": "Please set your preferred network mode to 4g_5g_preferred.",
    "disconnect_vpn": "Please disconnect your VPN.",
    "toggle_wifi_calling": "Please turn off Wi-Fi Calling.",
    "make_payment": "Please make the payment for that request.",
}
REFUEL_GB = 2.0


class TelecomOracle:
    name = "oracle"

    def start(self, info: EpisodeInfo) -> TelecomOracleEpisode:
        return TelecomOracleEpisode(info)


class TelecomOracleEpisode(ScriptedEpisode):
    def _ask(self, tool: str, text: str | None = None) -> Steps:
        """Ask the customer to do one thing on the phone; their report."""
        return (yield from self._say(text or ASK[tool]))

    def _read(self, name: str, arguments: dict) -> Steps:
        result = yield from self._call(name, arguments)
        return None if result.error else json.loads(result.content or "null")

    def _write(self, name: str, arguments: dict, what: str) -> Steps:
        """A change to the account, once the customer said yes to it; False when they did not."""
        reply = yield from self._say(f"{what} To confirm, shall I make this change to your account (yes/no)?")
        if not re.search(r"\b(yes|go ahead|sure|ok|okay)\b", reply.lower()):
            return False
        result = yield from self._call(name, arguments)
        return not result.error

    def _transfer(self, why: str) -> Steps:
        yield from self._call("transfer_to_human_agents", {"summary": why})
        yield from self._say("I have transferred you to a human agent who can help with this.")

    def _run(self) -> Steps:
        found = yield from self._find_line()
        if found is None:
            return None
        goal, cid, line = found
        status = yield from self._restore_service(cid, line)
        if status is None:
            return None
        wants_mms = "mms" in goal or "picture" in goal
        wants_data = wants_mms or "mobile data" in goal or "internet" in goal or "speed" in goal
        if not wants_data:
            return (yield from self._resolved())
        if (yield from self._mobile_data(cid, line, status, "abroad" in goal, wants_mms)):
            return None
        yield from self._mms()
        return (yield from self._resolved())

    def _find_line(self) -> Steps:
        """The customer by the phone number they give, and its line: (their request in lower case, customer id,
        line record), or None once transferred (no such customer or line)."""
        first = self._last_user()
        found = PHONE_RE.search(first)
        reply = first
        while found is None:
            reply = yield from self._say("Could you give me the phone number of the line with the issue?")
            found = PHONE_RE.search(reply)
        phone = found.group(0)
        customer = yield from self._read("get_customer_by_phone", {"phone_number": phone})
        if customer is None:
            yield from self._transfer(f"No customer found for {phone}.")
            return None
        self.user_id = cid = customer["customer_id"]
        line = None
        for line_id in customer["line_ids"]:
            record = yield from self._read("get_details_by_id", {"id": line_id})
            if record and record["phone_number"] == phone:
                line = record
                break
        if line is None:
            yield from self._transfer(f"No line {phone} on the account.")
            return None
        return first.lower(), cid, line

    def _restore_service(self, cid: str, line: dict) -> Steps:
        """Service first: what cannot be fixed here, then the line, then the phone. The network status the
        customer reports last, or None once transferred."""
        lid = line["line_id"]
        if line["status"] == "Suspended" and (line["contract_end_date"] or "9999") < TODAY.isoformat():
            yield from self._transfer("Line suspended and its contract has ended.")
            return None
        status = yield from self._ask("check_network_status")
        if re.search(r"SIM Card Status: locked", status):
            yield from self._transfer("The SIM card is locked with a PIN or PUK code.")
            return None
        if line["status"] == "Suspended":
            bills = yield from self._read("get_bills_for_customer", {"customer_id": cid})
            overdue = [b for b in bills or [] if b["status"] == "Overdue"]
            if not overdue:
                yield from self._transfer("Line suspended for a reason I cannot fix.")
                return None
            bill_id = overdue[0]["bill_id"]
            what = f"Your line is suspended for the overdue bill {bill_id} ({overdue[0]['total_due']} USD)."
            what += " I will send you a payment request for it."
            yield from self._write("send_payment_request", {"customer_id": cid, "bill_id": bill_id}, what)
            yield from self._ask("check_payment_request")
            yield from self._ask("make_payment")
            bill = yield from self._read("get_details_by_id", {"id": overdue[0]["bill_id"]})
            if not bill or bill["status"] != "Paid":
                yield from self._transfer("The overdue bill could not be paid.")
                return None
            yield from self._write("resume_line", {"customer_id": cid, "line_id": lid}, f"I will resume line {lid}.")
            yield from self._ask("reboot_device")
            status = yield from self._ask("check_network_status")
        if "Airplane Mode: ON" in status:
            yield from self._ask("toggle_airplane_mode")
            status = yield from self._ask("check_network_status")
        if re.search(r"SIM Card Status: locked", status):
            yield from self._transfer("The SIM card is locked with a PIN or PUK code.")
            return None
        if "SIM Card Status: missing" in status:
            yield from self._ask("reseat_sim_card")
            status = yield from self._ask("check_network_status")
        if "Cellular Connection: no_service" in status:
            apn = yield from self._ask("check_apn_settings")
            if "APN Name: broken" in apn:
                yield from self._ask("reset_apn_settings")
                yield from self._ask("reboot_device")
                status = yield from self._ask("check_network_status")
        if "Cellular Connection: no_service" in status:
            yield from self._transfer("No service after every step of the workflow.")
            return None
        return status

    def _mobile_data(self, cid: str, line: dict, status: str, abroad: bool, wants_mms: bool) -> Steps:
        """Mobile data: roaming abroad, the data switch, the allowance, then (unless the issue is MMS) speed.
        True when the conversation is over here."""
        lid = line["line_id"]
        if abroad:
            if not line["roaming_enabled"]:
                what = f"Roaming is not enabled on line {lid}; I will enable it."
                yield from self._write("enable_roaming", {"customer_id": cid, "line_id": lid}, what)
            if "Data Roaming Enabled: No" in status:
                yield from self._ask("toggle_roaming")
        if "Mobile Data Enabled: No" in status:
            yield from self._ask("toggle_data")
        usage = yield from self._read("get_data_usage", {"customer_id": cid, "line_id": lid})
        if usage and usage["data_used_gb"] >= usage["data_limit_gb"] + usage["data_refueling_gb"]:
            what = (
                f"You have used your {usage['data_limit_gb']} GB allowance. I can add {REFUEL_GB} GB for this cycle,"
                " charged on your next bill."
            )
            args = {"customer_id": cid, "line_id": lid, "gb_amount": REFUEL_GB}
            if not (yield from self._write("refuel_data", args, what)):
                yield from self._say("Understood. Without more data, mobile data stays off until the cycle ends.")
                return True
        if not wants_mms:
            report = yield from self._ask("run_speed_test")
            if "(Excellent)" not in report:
                if "Data Saver mode is ON" in (yield from self._ask("check_data_restriction_status")):
                    yield from self._ask("toggle_data_saver_mode")
                if "4g_5g_preferred" not in (yield from self._ask("check_network_mode_preference")):
                    yield from self._ask("set_network_mode_preference")
                if "connected" in (yield from self._ask("check_vpn_status")).split("Details")[0]:
                    yield from self._ask("disconnect_vpn")
            yield from self._resolved()
            return True
        return False

    def _mms(self) -> Steps:
        """MMS: network mode, Wi-Fi calling, the MMS settings, the messaging app's permissions."""
        if "cannot send" in (yield from self._ask("can_send_mms")):
            if "2g_only" in (yield from self._ask("check_network_mode_preference")):
                yield from self._ask("set_network_mode_preference")
            if "turned ON" in (yield from self._ask("check_wifi_calling_status")):
                yield from self._ask("toggle_wifi_calling")
            if "Not Set" in (yield from self._ask("check_apn_settings")):
                yield from self._ask("reset_apn_settings")
                yield from self._ask("reboot_device")
            perms = yield from self._ask("check_app_permissions")
            granted = perms.split("permission for:")[-1] if "permission for:" in perms else ""
            for perm in ("sms", "storage"):
                if perm not in granted:
                    yield from self._ask(
                        "grant_app_permission", f"Please grant the messaging app the {perm} permission."
                    )

    def _resolved(self) -> Steps:
        reply = yield from self._say("Your issue should be resolved now. Could you check on your phone?")
        if "still not working" in reply.lower():
            yield from self._transfer("The issue persists after the workflow.")
