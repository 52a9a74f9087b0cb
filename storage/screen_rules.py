"""The injection screen's rules (storage/sanitize.py runs them): what instruction-shaped text
looks like, one named pattern per technique. Kept apart from the screen's mechanism so a rule
can be read, reviewed and added without the normalisation around it; what they catch and miss
is measured in tests/unit/test_injection_screen.py.
"""

from __future__ import annotations

import re

_F = re.IGNORECASE | re.MULTILINE
_W = r"[^.\n]"  # stay inside one sentence

# (reason, pattern). Patterns run on normalised, lower-cased variants of the text (see
# `_variants`), so they are written in lower case and need no Unicode tricks of their own.
SCREENS: list[tuple[str, re.Pattern[str]]] = [
    # --- override the instructions the model already has ----------------------------------
    ("ignore-instructions", re.compile(
        rf"\b(ignore|disregard|forget|override|bypass|skip)\b{_W}{{0,40}}?"
        rf"\b(previous|prior|above|earlier|preceding|foregoing|original)\b{_W}{{0,30}}?"
        r"\b(instructions?|prompts?|rules|guidance|guidelines|directions|directives|"
        r"messages|policy|policies|context|commands)\b", _F)),
    ("ignore-instructions", re.compile(
        r"\b(ignore|disregard|forget)\s+(all\s+of\s+|everything\s+|all\s+)?(the\s+)?above\b", _F)),
    ("ignore-instructions", re.compile(
        rf"\bforget\s+(everything|all)\b{_W}{{0,40}}\b(told|said|instructed|learned|given)\b",
        _F)),
    ("ignore-instructions", re.compile(r"\bignore\s+the\s+(user|system|developer)\b", _F)),
    ("ignore-instructions-multilingual", re.compile(
        r"\b(ignora\w*|olvida\w*|omite)\s+(todas?\s+)?(las\s+|los\s+)?"
        r"(instrucciones|indicaciones|reglas|ordenes)\s+(anteriores|previas)"
        r"|\b(ignore[rz]?|oublie[rz]?)\s+(toutes\s+|tous\s+)?(les\s+)?"
        r"(instructions|consignes|regles|directives)\s+(precedentes|anterieures)"
        r"|\b(ignorier\w*|vergiss\w*|missachte\w*)\s+(alle\s+)?(vorherigen|bisherigen|"
        r"vorigen|obigen|fruheren)\s+(anweisungen|instruktionen|befehle|regeln|vorgaben)"
        r"|\b(ignora\w*|esquece\w*)\s+(todas\s+)?(as\s+|le\s+)?(instrucoes|istruzioni)\s+"
        r"(anteriores|precedenti)"
        r"|\b(negeer|vergeet)\s+(alle\s+)?(vorige|eerdere)\s+(instructies|opdrachten)"
        r"|\b(игнорир\w*|забуд\w*)\s+(все\s+)?(предыдущ\w*|прежн\w*)\s+(инструкц\w*|указан\w*)"
        r"|(忽略|无视|忽視|無視)\s*(之前|以前|先前|上面|上述|前面)?\s*(的)?\s*(所有|全部)?\s*(的)?\s*"
        r"(指令|指示|说明|說明|提示|规则|規則)"
        r"|(以前|前|上記)\s*の\s*(指示|命令)\s*を\s*(無視|忘れ)"
        r"|(이전|앞의)\s*(모든\s*)?(지시|명령)\w*\s*(을|를)?\s*무시", _F)),
    ("override-claim", re.compile(
        r"\b(system|admin|security|policy|developer)\s+override\b"
        rf"|\boverrides?\s+(all\s+)?(earlier|previous|prior|existing)\s+{_W}{{0,10}}"
        r"\b(policy|policies|instructions|rules)\b"
        r"|\bnew\s+(trusted\s+|system\s+)?instructions?\s*(from|by)\s+(the\s+)?"
        r"(developer|system|admin|administrator|operator|owner|platform|security)"
        r"|\bnew\s+trusted\s+instructions?\b"
        rf"|\bfrom\s+now\s+on\b{_W}{{0,6}}[,:]?\s*(you|answer|always|never|respond|reply|"
        r"ignore|do\s+not|don't|treat|print)\b", _F)),
    # --- role play and jailbreak personas ------------------------------------------------
    ("role-play", re.compile(
        # "you are now able to deploy" is a changelog, "you are now DAN" is not.
        r"\byou\s+are\s+(now\s+(a|an|the|in|my|dan|free|unrestricted|unfiltered|jailbroken)\b"
        r"|no\s+longer\s+(bound|restricted|an?\s+ai|required\s+to))"
        r"|\b(pretend|imagine)\s+(that\s+)?(you\s+are|you're|to\s+be)\b"
        r"|\bact\s+as\s+(if\s+you\s+(are|were)|an?\s+(unrestricted|unfiltered|jailbroken))"
        r"|\b(dan|do\s+anything\s+now)\b.{0,40}\b(no\s+restrictions|never\s+refuses?)"
        r"|\bwith\s+no\s+(restrictions|rules|filters|limits)\b"
        r"|\b(jailbreak|jailbroken|developer\s+mode\s+(enabled|on))\b", _F)),
    # --- chat-template and turn forgery ---------------------------------------------------
    ("chat-template-forgery", re.compile(
        r"<\|\s*(im_start|im_end|system|user|assistant|endoftext|eot_id|start_header_id|"
        r"end_header_id|begin_of_text)\s*\|>"
        r"|\[/?inst\]|<</?sys>>|<\s*/?\s*(start_of_turn|end_of_turn)\s*>"
        r"|^\s*#{1,6}\s*(system|assistant|developer|instructions?)\s*:?\s*$"
        r"|^\s*#{1,6}\s*(system|assistant|developer)\s*:", _F)),
    ("turn-forgery", re.compile(
        r"(^|<!--)\s*(assistant|developer|human)\s*:\s*\S"
        r"|(^|<!--)\s*system\s*:\s*(you|ignore|always|never|from\s+now|the\s+following|new|"
        r"call|do|follow|disregard|forget|override|treat|print|reveal|export)\b", _F)),
    ("delimiter-forgery", re.compile(
        # An opening <system> is a common XML element; a closing one or an instructions tag
        # is how a forged prompt section ends or begins.
        r"<\s*/\s*(system|assistant|developer)\s*>"
        r"|<\s*/?\s*(instructions?|untrusted[\w-]*|trusted[\w-]*)\s*>"
        r"|<+\s*/?\s*(end|begin|start|open|close)?[\s_-]*untrusted[\s_-]*data\s*>+"
        r"|\[\[untrusted_data\]\]", _F)),
    # --- tool-call look-alikes --------------------------------------------------------------
    ("tool-call-lookalike", re.compile(
        r"<\s*/?\s*(tool_call|tool_use|tool_result|function_calls?|function_results|invoke|"
        r"antml:[a-z_]+)\b"
        # A bare {"name", "arguments"} pair is how developers document function calling; it
        # counts only when it names one of memhub's own tools (the next pattern).
        r"|\"(tool|function|tool_name|recipient_name)\"\s*:\s*\"[^\"]{1,80}\"[^{}]{0,200}"
        r"\"(arguments|args|parameters|input|params)\"\s*:\s*[{\[]"
        r"|\"(arguments|args|parameters|input|params)\"\s*:\s*[{\[][^{}]{0,300}\}[^{}]{0,200}"
        r"\"(tool|function|tool_name)\"\s*:\s*\"", _F)),
    ("tool-call-lookalike", re.compile(
        r"\b(call|invoke|execute|run|use)\s+(the\s+)?`?(memory|handoff|session|artifact)_[a-z_]+`?"
        r"\s+(tool\s+)?(on|for|with|to)\b"
        r"|\"name\"\s*:\s*\"(memory|handoff|session|artifact)_[a-z_]+\"", _F)),
    # --- exfiltration ----------------------------------------------------------------------
    ("exfiltration", re.compile(
        r"\b(send|post|upload|forward|transmit|submit|exfiltrate|leak|report|pipe|curl)\b"
        r"[^\n]{0,100}?\b(contents?|memor(y|ies)|keys?|secrets?|tokens?|credentials|passwords?|"
        r"context|conversation|history|everything|variables)\b[^\n]{0,80}?"
        r"\b(to|into)\s+<?https?://"
        # An image URL whose query is left open for the reader to fill (a badge's fixed
        # query string is not an exfiltration channel).
        r"|!\[[^\]\n]*\]\(\s*<?https?://[^)\s]*[?&][\w-]*=(\)|\{\{|\$|<)"
        r"|!\[[^\]\n]*\]\(\s*<?https?://[^)\s]*[?&][\w-]*=[^)\s]*"
        r"(secret|token|key|password|credential|context|memor)"
        r"|https?://[^\s)]*[?&][\w-]*=(?=[\s)\]>\"']|$|\{\{)"
        r"|https?://[^\s)]*\{\{[^}]*\}\}"
        r"|\bappend\b[^\n]{0,80}\bto\s+the\s+(url|link|query)", _F)),
    ("secret-request", re.compile(
        r"\b(reveal\w*|print|output|list|dump|send|paste|export|share|show|include|leak|"
        r"disclose|give\s+me|tell\s+me|gib|envoie|revela|muestra)\b[^.;\n]{0,40}?"
        # "only admins can export API keys" is a project fact; "print all your API keys" or
        # "show the system prompt" asks the reader to hand something over.
        r"(\b(your|all|every|any)\s+(of\s+)?(the\s+|your\s+)?(stored\s+|saved\s+)?"
        r"(api\s+keys?|environment\s+variables?|env\s+vars?|credentials|secrets|passwords|"
        r"private\s+keys?|access\s+tokens?|cles?\s+api)"
        r"|\b(systemprompt|system\s*prompt|context\s+window|hidden\s+instructions|"
        r"initial\s+prompt))\b", _F)),
    ("secret-request", re.compile(
        r"\b(contents?|text)\s+of\s+your\s+(context|memory|instructions|prompt|system)", _F)),
    ("fetch-and-echo", re.compile(
        rf"\b(fetch|open|visit|download|curl|retrieve|read)\b{_W}{{0,60}}\b(paste|include|"
        rf"insert|put|echo|copy)\b{_W}{{0,40}}\b(your|the)\s+(reply|answer|response|output)",
        _F)),
    # --- directives addressed to whatever model reads the text later -----------------------
    ("reader-directive", re.compile(
        r"\b(note|message|instructions?|attention|reminder|memo)\s+(to|for)\s+(any|all|every|the)"
        r"\s+(ai|llm|agent|assistant|model|bot)s?\b"
        r"|\b(ai|llm)\s+(agents?|assistants?|models?)\s+(reading|processing|that\s+reads?|"
        r"who\s+reads?)\b"
        r"|\b(whoever|anyone\s+who|any\s+(ai|agent|model|assistant|llm)\s+(that|who))\s+"
        r"(reads?|handles|answers|processes|sees)\s+(this|the\s+next)\b"
        rf"|\bwhen(ever)?\s+(you\s+are\s+|you're\s+)?asked\s+(about|for|whether)\b{_W}{{0,60}}"
        r"\b(always|never)\s+(say|state|tell|answer|reply|respond|claim)\b"
        r"|\b(do\s+not|don't|never)\s+(mention|reveal|disclose)\s+(this|these|step\s+\d+|that\s+"
        r"you|it\s+to\s+the\s+user)\b", _F)),
    ("screening-bypass", re.compile(
        rf"\b(skip|bypass|disable|turn\s+off|circumvent|ignore)\b{_W}{{0,25}}"
        r"\b(safety|content|injection|prompt|security)\s+(screening|screen|filters?|checks?|"
        r"scan\w*|guard\w*)"
        r"|\bquarantine\s+is\s+(disabled|off|suspended)"
        r"|\b(pre-?approved|approved|authori[sz]ed)\s+by\s+(security|the\s+security\s+team|"
        r"the\s+platform\s+team|platform\s+team|an?\s+admin|the\s+admin|the\s+developer)", _F)),
    ("decode-and-obey", re.compile(
        rf"\bdecode\b{_W}{{0,40}}\b(and|then)\s+(do|follow|execute|act|run|obey|apply)\b", _F)),
]
