"""`memhub-admin model import PATH`: give memhub its embedding model without a network.

PATH is a directory holding the ONNX export of all-MiniLM-L6-v2 (as fastembed downloads it from
Qdrant/all-MiniLM-L6-v2-onnx). The files are checked, copied into MEMHUB_DATA_DIR/models and
checked again there (embedding/model_files.py); a running memhub without a model loads it
within seconds, and every later start finds it with no setting. Refused: exit 1, MODEL_INVALID,
nothing changed. No database is involved.

admin/cli.py registers it with `add_commands`.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from ..config import Settings
from ..embedding import model_files
from ..errors import MemhubError
from .cli_support import EXIT_OK, emit, fail


def cmd_import(args: argparse.Namespace, settings: Settings) -> int:
    try:
        report = model_files.import_model(Path(args.path), settings)
    except MemhubError as err:
        return fail(args, f"{err.message} ({err.remedy})", err.code)
    text = (f"imported {report['model']} into {report['imported_to']}: the model loads and "
            f"embeds to {report['dim']} dimensions. A running memhub without a model picks it "
            "up within seconds; every start finds it there.")
    if settings.embed_model_path is not None:
        text += (f"\nNote: MEMHUB_EMBED_MODEL_PATH is set ({settings.embed_model_path}) and "
                 "comes first; unset it to use this copy.")
    emit(args, report, text)
    return EXIT_OK


def add_commands(sub, common: argparse.ArgumentParser) -> None:
    model = sub.add_parser("model", help="the embedding model")
    commands = model.add_subparsers(dest="model_command", required=True)
    imported = commands.add_parser(
        "import", parents=[common],
        help="check the ONNX export of all-MiniLM-L6-v2 in PATH and copy it into the data "
             "directory, where memhub finds it")
    imported.add_argument("path", help="directory holding model.onnx, tokenizer.json, ...")
    # No database: works before the first start, and with DATABASE_URL unreachable.
    imported.set_defaults(func=cmd_import, database=False)
