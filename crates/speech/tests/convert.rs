//! The Whisper converter on a small synthetic model: every required
//! CTranslate2 variable, small dimensions, two layers each side. Needs no
//! native code and no downloaded weights.

use std::path::Path;

use half::f16;
use proptest::prelude::*;
use speech::convert::mel::{hz_to_mel, mel_to_hz};
use speech::convert::vocab::{byte_to_unicode, decode_token, parse_vocabulary, unicode_to_byte};
use speech::convert::{
    convert, q8_0, ConvertError, Ct2Model, GgmlModel, GgmlType, MelFilters, TensorType,
};

// ---------------------------------------------------------------------------
// A synthetic CTranslate2 model.bin

/// One CTranslate2 variable: name, shape, dtype code, raw data.
#[derive(Clone, Debug)]
struct Var {
    name: String,
    shape: Vec<usize>,
    dtype: u8,
    data: Vec<u8>,
}

/// Deterministic values in [-1, 1), different per variable, already
/// representable in f16.
fn values(name: &str, n: usize) -> Vec<f32> {
    let mut h = name.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    });
    (0..n)
        .map(|_| {
            h = h
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            f16::from_f32(((h >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0).to_f32()
        })
        .collect()
}

fn f16_var(name: &str, shape: &[usize]) -> Var {
    let n = shape.iter().product();
    let data = values(name, n)
        .iter()
        .flat_map(|v| f16::from_f32(*v).to_le_bytes())
        .collect();
    Var {
        name: name.into(),
        shape: shape.to_vec(),
        dtype: 4,
        data,
    }
}

fn i16_scalar(name: &str, v: i16) -> Var {
    Var {
        name: name.into(),
        shape: vec![],
        dtype: 2,
        data: v.to_le_bytes().to_vec(),
    }
}

/// Sizes of a synthetic Whisper.
#[derive(Clone, Copy)]
struct Dims {
    n: usize,
    heads: i16,
    mels: usize,
    audio_ctx: usize,
    text_ctx: usize,
    vocab: usize,
    layers: usize,
}

const DIMS: Dims = Dims {
    n: 64,
    heads: 2,
    mels: 80,
    audio_ctx: 10,
    text_ctx: 6,
    vocab: 262,
    layers: 2,
};

fn layer_norm(v: &mut Vec<Var>, p: &str, n: usize) {
    v.push(f16_var(&format!("{p}/gamma"), &[n]));
    v.push(f16_var(&format!("{p}/beta"), &[n]));
}

fn linear(v: &mut Vec<Var>, p: &str, n_out: usize, n_in: usize) {
    v.push(f16_var(&format!("{p}/weight"), &[n_out, n_in]));
    v.push(f16_var(&format!("{p}/bias"), &[n_out]));
}

/// All the variables of a Whisper CTranslate2 model, with zero key biases
/// as CTranslate2 writes them.
fn whisper_vars(d: Dims) -> Vec<Var> {
    let n = d.n;
    let mut v = vec![
        i16_scalar("encoder/num_heads", d.heads),
        i16_scalar("decoder/num_heads", d.heads),
        Var {
            name: "decoder/activation".into(),
            shape: vec![],
            dtype: 1,
            data: vec![3],
        },
        f16_var("encoder/conv1/weight", &[n, d.mels, 3]),
        f16_var("encoder/conv1/bias", &[n]),
        f16_var("encoder/conv2/weight", &[n, n, 3]),
        f16_var("encoder/conv2/bias", &[n]),
        f16_var("encoder/position_encodings/encodings", &[d.audio_ctx, n]),
        f16_var("decoder/position_encodings/encodings", &[d.text_ctx, n]),
        f16_var("decoder/embeddings/weight", &[d.vocab, n]),
    ];
    layer_norm(&mut v, "encoder/layer_norm", n);
    layer_norm(&mut v, "decoder/layer_norm", n);
    for side in ["encoder", "decoder"] {
        for i in 0..d.layers {
            let l = format!("{side}/layer_{i}");
            layer_norm(&mut v, &format!("{l}/self_attention/layer_norm"), n);
            linear(&mut v, &format!("{l}/self_attention/linear_0"), 3 * n, n);
            linear(&mut v, &format!("{l}/self_attention/linear_1"), n, n);
            layer_norm(&mut v, &format!("{l}/ffn/layer_norm"), n);
            linear(&mut v, &format!("{l}/ffn/linear_0"), 4 * n, n);
            linear(&mut v, &format!("{l}/ffn/linear_1"), n, 4 * n);
            zero_rows(
                &mut v,
                &format!("{l}/self_attention/linear_0/bias"),
                n,
                2 * n,
            );
            if side == "decoder" {
                layer_norm(&mut v, &format!("{l}/attention/layer_norm"), n);
                linear(&mut v, &format!("{l}/attention/linear_0"), n, n);
                linear(&mut v, &format!("{l}/attention/linear_1"), 2 * n, n);
                linear(&mut v, &format!("{l}/attention/linear_2"), n, n);
                zero_rows(&mut v, &format!("{l}/attention/linear_1/bias"), 0, n);
            }
        }
    }
    v
}

/// Zeroes items `from..to` of a 1-D f16 variable.
fn zero_rows(v: &mut [Var], name: &str, from: usize, to: usize) {
    let var = v.iter_mut().find(|x| x.name == name).unwrap();
    var.data[from * 2..to * 2].fill(0);
}

fn ct2_string(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(&(s.len() as u16 + 1).to_le_bytes());
    out.extend_from_slice(s.as_bytes());
    out.push(0);
}

/// Serialises variables as a CTranslate2 `model.bin`.
fn model_bin(version: u32, spec: &str, vars: &[Var]) -> Vec<u8> {
    let mut b = version.to_le_bytes().to_vec();
    ct2_string(&mut b, spec);
    b.extend_from_slice(&3u32.to_le_bytes());
    b.extend_from_slice(&(vars.len() as u32).to_le_bytes());
    for v in vars {
        ct2_string(&mut b, &v.name);
        b.push(v.shape.len() as u8);
        for &d in &v.shape {
            b.extend_from_slice(&(d as u32).to_le_bytes());
        }
        b.push(v.dtype);
        b.extend_from_slice(&(v.data.len() as u32).to_le_bytes());
        b.extend_from_slice(&v.data);
    }
    b.extend_from_slice(&1u32.to_le_bytes());
    ct2_string(&mut b, "decoder/projection/weight");
    ct2_string(&mut b, "decoder/embeddings/weight");
    b
}

/// 256 byte tokens, a few merges, then special tokens.
fn vocabulary_txt(d: Dims) -> String {
    let mut lines: Vec<String> = (0..=255u8)
        .map(|b| byte_to_unicode(b).to_string())
        .collect();
    lines.extend(["Ġhello", "Ġwor", "ld", "Ċ"].map(String::from));
    assert!(lines.len() < d.vocab);
    lines.extend(["<|endoftext|>", "<|startoftranscript|>"].map(String::from));
    lines.join("\n") + "\n"
}

/// A model directory in a temporary directory.
fn model_dir(bin: &[u8], vocab: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("model.bin"), bin).unwrap();
    std::fs::write(dir.path().join("vocabulary.txt"), vocab).unwrap();
    dir
}

fn synthetic_dir() -> tempfile::TempDir {
    model_dir(
        &model_bin(6, "WhisperSpec", &whisper_vars(DIMS)),
        &vocabulary_txt(DIMS),
    )
}

/// The f32 values of a synthetic variable, or rows `part` of `parts`.
fn source(name: &str, part: usize, parts: usize) -> Vec<f32> {
    let var = whisper_vars(DIMS)
        .into_iter()
        .find(|v| v.name == name)
        .unwrap();
    let all: Vec<f32> = var
        .data
        .chunks(2)
        .map(|b| f16::from_le_bytes([b[0], b[1]]).to_f32())
        .collect();
    let len = all.len() / parts;
    all[part * len..(part + 1) * len].to_vec()
}

// ---------------------------------------------------------------------------
// The mapping, written out independently of the library, one tensor a line:
// whisper.cpp name, CTranslate2 name, slice (part/parts of the outermost
// dimension), ggml dims innermost first, type (`w` = the weight type).
// `{i}`/`{l}` is the block, `n` the width, `a`/`t` the audio/text context.

const TOP: &str = "
encoder.positional_embedding    encoder/position_encodings/encodings  0/1 n,a     f32
encoder.conv1.weight            encoder/conv1/weight                  0/1 3,80,n  f16
encoder.conv1.bias              encoder/conv1/bias                    0/1 1,n     f32
encoder.conv2.weight            encoder/conv2/weight                  0/1 3,n,n   f16
encoder.conv2.bias              encoder/conv2/bias                    0/1 1,n     f32
encoder.ln_post.weight          encoder/layer_norm/gamma              0/1 n       f32
encoder.ln_post.bias            encoder/layer_norm/beta               0/1 n       f32
decoder.positional_embedding    decoder/position_encodings/encodings  0/1 n,t     f32
decoder.token_embedding.weight  decoder/embeddings/weight             0/1 n,262   w
decoder.ln.weight               decoder/layer_norm/gamma              0/1 n       f32
decoder.ln.bias                 decoder/layer_norm/beta               0/1 n       f32";

const BLOCK: &str = "
blocks.{i}.attn_ln.weight     layer_{l}/self_attention/layer_norm/gamma  0/1 n      f32
blocks.{i}.attn_ln.bias       layer_{l}/self_attention/layer_norm/beta   0/1 n      f32
blocks.{i}.attn.query.weight  layer_{l}/self_attention/linear_0/weight   0/3 n,n    w
blocks.{i}.attn.query.bias    layer_{l}/self_attention/linear_0/bias     0/3 n      f32
blocks.{i}.attn.key.weight    layer_{l}/self_attention/linear_0/weight   1/3 n,n    w
blocks.{i}.attn.value.weight  layer_{l}/self_attention/linear_0/weight   2/3 n,n    w
blocks.{i}.attn.value.bias    layer_{l}/self_attention/linear_0/bias     2/3 n      f32
blocks.{i}.attn.out.weight    layer_{l}/self_attention/linear_1/weight   0/1 n,n    w
blocks.{i}.attn.out.bias      layer_{l}/self_attention/linear_1/bias     0/1 n      f32
blocks.{i}.mlp_ln.weight      layer_{l}/ffn/layer_norm/gamma             0/1 n      f32
blocks.{i}.mlp_ln.bias        layer_{l}/ffn/layer_norm/beta              0/1 n      f32
blocks.{i}.mlp.0.weight       layer_{l}/ffn/linear_0/weight              0/1 n,4n   w
blocks.{i}.mlp.0.bias         layer_{l}/ffn/linear_0/bias                0/1 4n     f32
blocks.{i}.mlp.2.weight       layer_{l}/ffn/linear_1/weight              0/1 4n,n   w
blocks.{i}.mlp.2.bias         layer_{l}/ffn/linear_1/bias                0/1 n      f32";

const CROSS: &str = "
blocks.{i}.cross_attn_ln.weight      layer_{l}/attention/layer_norm/gamma  0/1 n    f32
blocks.{i}.cross_attn_ln.bias        layer_{l}/attention/layer_norm/beta   0/1 n    f32
blocks.{i}.cross_attn.query.weight   layer_{l}/attention/linear_0/weight   0/1 n,n  w
blocks.{i}.cross_attn.query.bias     layer_{l}/attention/linear_0/bias     0/1 n    f32
blocks.{i}.cross_attn.key.weight     layer_{l}/attention/linear_1/weight   0/2 n,n  w
blocks.{i}.cross_attn.value.weight   layer_{l}/attention/linear_1/weight   1/2 n,n  w
blocks.{i}.cross_attn.value.bias     layer_{l}/attention/linear_1/bias     1/2 n    f32
blocks.{i}.cross_attn.out.weight     layer_{l}/attention/linear_2/weight   0/1 n,n  w
blocks.{i}.cross_attn.out.bias       layer_{l}/attention/linear_2/bias     0/1 n    f32";

/// One expected tensor.
struct Expect {
    name: String,
    ct2: String,
    part: usize,
    parts: usize,
    ne: Vec<usize>,
    ty: TensorType,
}

fn parse_table(table: &str, prefix: (&str, &str), i: usize, weight: TensorType) -> Vec<Expect> {
    let d = DIMS;
    let dim = |s: &str| match s {
        "n" => d.n,
        "4n" => 4 * d.n,
        "a" => d.audio_ctx,
        "t" => d.text_ctx,
        s => s.parse().unwrap(),
    };
    let fill = |s: &str| {
        s.replace("{i}", &i.to_string())
            .replace("{l}", &i.to_string())
    };
    table
        .lines()
        .filter(|l| !l.is_empty())
        .map(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            let (part, parts) = f[2].split_once('/').unwrap();
            Expect {
                name: format!("{}{}", prefix.0, fill(f[0])),
                ct2: format!("{}{}", prefix.1, fill(f[1])),
                part: part.parse().unwrap(),
                parts: parts.parse().unwrap(),
                ne: f[3].split(',').map(dim).collect(),
                ty: match f[4] {
                    "f32" => TensorType::F32,
                    "f16" => TensorType::F16,
                    _ => weight,
                },
            }
        })
        .collect()
}

/// Every tensor of the synthetic model, as whisper.cpp's loader wants it.
fn expected_tensors(kind: GgmlType) -> Vec<Expect> {
    let w = match kind {
        GgmlType::F16 => TensorType::F16,
        GgmlType::Q8_0 => TensorType::Q8_0,
    };
    let mut out = parse_table(TOP, ("", ""), 0, w);
    for i in 0..DIMS.layers {
        out.extend(parse_table(BLOCK, ("encoder.", "encoder/"), i, w));
        out.extend(parse_table(BLOCK, ("decoder.", "decoder/"), i, w));
        out.extend(parse_table(CROSS, ("decoder.", "decoder/"), i, w));
    }
    out
}

// ---------------------------------------------------------------------------
// Conversions that work

fn convert_synthetic(kind: GgmlType) -> (GgmlModel, speech::convert::ConvertReport) {
    let dir = synthetic_dir();
    let out = dir.path().join("out.bin");
    let report = convert(dir.path(), &out, kind).expect("converts");
    let model = GgmlModel::open(&out).unwrap();
    assert_eq!(report.bytes, std::fs::metadata(&out).unwrap().len());
    (model, report)
}

#[test]
fn the_output_folder_is_made_when_missing() {
    let dir = synthetic_dir();
    let out = dir.path().join("speech/whisper/model.bin");
    convert(dir.path(), &out, GgmlType::Q8_0).expect("converts into a new folder");
    GgmlModel::open(&out).unwrap().validate().unwrap();
}

#[test]
fn header_is_whisper_cpp_layout_byte_for_byte() {
    let dir = synthetic_dir();
    let out = dir.path().join("out.bin");
    convert(dir.path(), &out, GgmlType::Q8_0).unwrap();
    let b = std::fs::read(&out).unwrap();
    let i32_at = |i: usize| i32::from_le_bytes(b[i..i + 4].try_into().unwrap());
    assert_eq!(&b[..4], b"lmgg", "magic 0x67676d6c, little endian");
    let header: Vec<i32> = (0..11).map(|k| i32_at(4 + 4 * k)).collect();
    assert_eq!(header, [262, 10, 64, 2, 2, 6, 64, 2, 2, 80, 2007]);
    assert_eq!((i32_at(48), i32_at(52)), (80, 201), "mel filter bank dims");
    let vocab_at = 56 + 80 * 201 * 4;
    assert_eq!(
        i32_at(vocab_at),
        260,
        "256 bytes + 4 merges, specials left to whisper.cpp"
    );
    assert_eq!(
        (i32_at(vocab_at + 4), &b[vocab_at + 8..vocab_at + 9]),
        (1, &[0u8][..])
    );
    // The first tensor record follows the last token (" hello", " wor", "ld", "\n").
    let tokens_len: usize = 256 * 5 + (4 + 6) + (4 + 4) + (4 + 2) + (4 + 1);
    let t = vocab_at + 4 + tokens_len;
    assert_eq!(
        (i32_at(t), i32_at(t + 4), i32_at(t + 8)),
        (2, 28, 0),
        "n_dims, name length, f32"
    );
    assert_eq!(
        (i32_at(t + 12), i32_at(t + 16)),
        (64, 10),
        "dims innermost first"
    );
    assert_eq!(&b[t + 20..t + 48], b"encoder.positional_embedding");
}

#[test]
fn f16_conversion_round_trips_every_tensor() {
    let (m, report) = convert_synthetic(GgmlType::F16);
    m.validate().unwrap();
    assert_eq!(m.kind(), Some(GgmlType::F16));
    assert_eq!(m.ftype, 1);
    let expected = expected_tensors(GgmlType::F16);
    assert_eq!(m.tensors.len(), expected.len());
    assert_eq!(report.tensors, 7 + 15 * 2 + 4 + 24 * 2);
    assert_eq!(report.tensors, expected.len());
    assert_eq!(
        (
            report.source_variables,
            report.source_version,
            report.vocab_tokens
        ),
        (whisper_vars(DIMS).len(), 6, 260)
    );
    let h = report.hparams;
    assert_eq!(
        (
            h.n_vocab,
            h.n_audio_state,
            h.n_audio_head,
            h.n_audio_layer,
            h.n_mels
        ),
        (262, 64, 2, 2, 80)
    );
    assert_eq!(
        (h.n_audio_ctx, h.n_text_ctx, h.n_text_head, h.n_text_layer),
        (10, 6, 2, 2)
    );
    for e in &expected {
        let t = m
            .tensor(&e.name)
            .unwrap_or_else(|| panic!("{} missing", e.name));
        assert_eq!((&t.ne, t.ty), (&e.ne, e.ty), "{}", e.name);
        // f16 and f32 hold the f16 source values exactly.
        let want = source(&e.ct2, e.part, e.parts);
        assert_eq!(m.values(&e.name).unwrap(), want, "{}", e.name);
    }
    assert!(m.tensor("encoder.blocks.0.attn.key.bias").is_none());
    assert!(m.tensor("decoder.blocks.1.cross_attn.key.bias").is_none());
    assert_eq!(
        m.tensor("encoder.conv1.bias").unwrap().shape(),
        [64, 1],
        "conv biases are (n, 1)"
    );
    assert_eq!(m.mel_filters, MelFilters::whisper(80));
    assert_eq!(m.vocab.len(), 260);
    assert_eq!(m.vocab[32], b" ");
    assert_eq!(m.vocab[256], b" hello");
    assert_eq!(m.vocab[259], b"\n");
    assert!(
        report.warnings.iter().any(|w| w.contains("<|endoftext|>")),
        "{:?}",
        report.warnings
    );
    assert!(!report.warnings.iter().any(|w| w.contains("key bias")));
}

#[test]
fn q8_0_conversion_dequantises_within_half_a_step() {
    let (m, _) = convert_synthetic(GgmlType::Q8_0);
    m.validate().unwrap();
    assert_eq!(m.kind(), Some(GgmlType::Q8_0));
    for Expect {
        name,
        ct2,
        part,
        parts,
        ne,
        ty,
    } in expected_tensors(GgmlType::Q8_0)
    {
        let t = m.tensor(&name).unwrap();
        assert_eq!((&t.ne, t.ty), (&ne, ty), "{name}");
        let want = source(&ct2, part, parts);
        let got = m.values(&name).unwrap();
        if ty != TensorType::Q8_0 {
            assert_eq!(got, want, "{name}");
            continue;
        }
        assert_eq!(t.len, want.len() / 32 * 34, "{name}");
        for (w, g) in want.chunks(32).zip(got.chunks(32)) {
            let step = w.iter().fold(0f32, |a, v| a.max(v.abs())) / 127.0;
            for (x, y) in w.iter().zip(g) {
                // Half a step, plus |q| ≤ 127 times the f16 rounding of the
                // step itself (2^-11 relative).
                assert!(
                    (x - y).abs() <= step * (0.5 + 127.0 / 2048.0) + 1e-7,
                    "{name}: {x} vs {y}"
                );
            }
        }
    }
    // Conv kernels stay f16 even in a q8_0 model, as whisper.cpp expects.
    assert_eq!(
        m.tensor("encoder.conv2.weight").unwrap().ty,
        TensorType::F16
    );
}

#[test]
fn nonzero_key_biases_are_reported() {
    let mut vars = whisper_vars(DIMS);
    let b = vars
        .iter_mut()
        .find(|v| v.name == "encoder/layer_1/self_attention/linear_0/bias")
        .unwrap();
    b.data[DIMS.n * 2..DIMS.n * 2 + 2].copy_from_slice(&f16::from_f32(0.25).to_le_bytes());
    let dir = model_dir(&model_bin(6, "WhisperSpec", &vars), &vocabulary_txt(DIMS));
    let r = convert(dir.path(), &dir.path().join("o.bin"), GgmlType::F16).unwrap();
    assert!(
        r.warnings
            .iter()
            .any(|w| w.contains("key bias") && w.contains("0.25")),
        "{:?}",
        r.warnings
    );
}

#[test]
fn f32_and_bf16_sources_are_accepted() {
    let mut vars = whisper_vars(DIMS);
    for v in vars.iter_mut().filter(|v| v.dtype == 4) {
        let vals: Vec<f32> = v
            .data
            .chunks(2)
            .map(|b| f16::from_le_bytes([b[0], b[1]]).to_f32())
            .collect();
        if v.name.contains("ffn") {
            v.dtype = 5; // bf16: the top halves of the f32s
            v.data = vals
                .iter()
                .flat_map(|x| half::bf16::from_f32(*x).to_le_bytes())
                .collect();
        } else {
            v.dtype = 0;
            v.data = vals.iter().flat_map(|x| x.to_le_bytes()).collect();
        }
    }
    let dir = model_dir(&model_bin(5, "WhisperSpec", &vars), &vocabulary_txt(DIMS));
    let out = dir.path().join("o.bin");
    convert(dir.path(), &out, GgmlType::F16).unwrap();
    let m = GgmlModel::open(&out).unwrap();
    m.validate().unwrap();
    let name = "encoder.blocks.0.attn.query.weight";
    assert_eq!(
        m.values(name).unwrap(),
        source("encoder/layer_0/self_attention/linear_0/weight", 0, 3)
    );
}

// ---------------------------------------------------------------------------
// Conversions that must fail, cleanly

fn convert_err(bin: &[u8], kind: GgmlType) -> ConvertError {
    let dir = model_dir(bin, &vocabulary_txt(DIMS));
    let out = dir.path().join("out.bin");
    std::fs::write(&out, b"previous model").unwrap();
    let err = convert(dir.path(), &out, kind).expect_err("must fail");
    assert_eq!(
        std::fs::read(&out).unwrap(),
        b"previous model",
        "output untouched on error"
    );
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names.len(), 3, "no temporary file left: {names:?}");
    err
}

fn without(name: &str) -> Vec<Var> {
    whisper_vars(DIMS)
        .into_iter()
        .filter(|v| v.name != name)
        .collect()
}

#[test]
fn missing_inputs_are_named() {
    let tmp = tempfile::tempdir().unwrap();
    let e = convert(
        &tmp.path().join("nope"),
        &tmp.path().join("o.bin"),
        GgmlType::F16,
    )
    .unwrap_err();
    assert!(matches!(e, ConvertError::MissingFile { .. }), "{e}");
    let e = convert(tmp.path(), &tmp.path().join("o.bin"), GgmlType::F16).unwrap_err();
    assert!(
        matches!(
            e,
            ConvertError::MissingFile {
                what: "model.bin",
                ..
            }
        ),
        "{e}"
    );
    let dir = synthetic_dir();
    std::fs::remove_file(dir.path().join("vocabulary.txt")).unwrap();
    let e = convert(dir.path(), &dir.path().join("o.bin"), GgmlType::F16).unwrap_err();
    assert!(
        matches!(
            e,
            ConvertError::MissingFile {
                what: "vocabulary.txt",
                ..
            }
        ),
        "{e}"
    );
}

#[test]
fn truncated_model_bin_is_reported_as_truncated() {
    let bin = model_bin(6, "WhisperSpec", &whisper_vars(DIMS));
    for cut in [0, 3, 5, 20, 100, 1000, bin.len() / 2, bin.len() - 1] {
        let e = convert_err(&bin[..cut], GgmlType::F16);
        assert!(
            matches!(
                e,
                ConvertError::Truncated {
                    file: "model.bin",
                    ..
                }
            ),
            "cut {cut}: {e}"
        );
    }
}

#[test]
fn wrong_version_or_spec_is_refused() {
    let vars = whisper_vars(DIMS);
    for v in [0, 3, 7, 0x6767_6d6c] {
        let e = convert_err(&model_bin(v, "WhisperSpec", &vars), GgmlType::F16);
        assert!(
            matches!(e, ConvertError::UnsupportedVersion { found, .. } if found == v),
            "{e}"
        );
    }
    let e = convert_err(&model_bin(6, "TransformerSpec", &vars), GgmlType::F16);
    assert!(
        matches!(&e, ConvertError::NotWhisper { found } if found == "TransformerSpec"),
        "{e}"
    );
}

#[test]
fn missing_variable_is_named() {
    for name in [
        "decoder/layer_1/ffn/linear_1/bias",
        "encoder/num_heads",
        "decoder/layer_0/attention/linear_2/weight",
    ] {
        let e = convert_err(&model_bin(6, "WhisperSpec", &without(name)), GgmlType::Q8_0);
        assert!(
            matches!(&e, ConvertError::MissingVariable { name: n } if n == name),
            "{e}"
        );
    }
}

#[test]
fn shape_mismatch_is_named() {
    let mut vars = without("encoder/conv2/weight");
    vars.push(f16_var("encoder/conv2/weight", &[64, 32, 3]));
    let e = convert_err(&model_bin(6, "WhisperSpec", &vars), GgmlType::F16);
    match e {
        ConvertError::ShapeMismatch {
            name,
            expected,
            found,
        } => {
            assert_eq!(
                (name.as_str(), expected, found),
                ("encoder/conv2/weight", vec![64, 64, 3], vec![64, 32, 3])
            );
        }
        e => panic!("{e}"),
    }
}

#[test]
fn unknown_or_unusable_dtypes_are_named() {
    let mut vars = whisper_vars(DIMS);
    vars.iter_mut()
        .find(|v| v.name == "decoder/layer_norm/beta")
        .unwrap()
        .dtype = 9;
    let e = convert_err(&model_bin(6, "WhisperSpec", &vars), GgmlType::F16);
    assert!(
        matches!(&e, ConvertError::UnknownDtype { name, code: 9 } if name == "decoder/layer_norm/beta"),
        "{e}"
    );

    // An int8-quantised CTranslate2 weight: right size, wrong kind.
    let mut vars = whisper_vars(DIMS);
    let v = vars
        .iter_mut()
        .find(|v| v.name == "encoder/layer_0/ffn/linear_0/weight")
        .unwrap();
    v.dtype = 1;
    v.data.truncate(v.data.len() / 2);
    let e = convert_err(&model_bin(6, "WhisperSpec", &vars), GgmlType::F16);
    assert!(
        matches!(&e, ConvertError::UnsupportedDtype { dtype: "int8", .. }),
        "{e}"
    );
}

#[test]
fn byte_count_disagreeing_with_shape_is_malformed() {
    let mut vars = whisper_vars(DIMS);
    vars.iter_mut()
        .find(|v| v.name == "encoder/conv1/bias")
        .unwrap()
        .data
        .pop();
    let e = convert_err(&model_bin(6, "WhisperSpec", &vars), GgmlType::F16);
    assert!(
        matches!(
            e,
            ConvertError::Malformed {
                file: "model.bin",
                ..
            }
        ),
        "{e}"
    );
}

#[test]
fn q8_0_needs_rows_of_32() {
    let d = Dims { n: 48, ..DIMS };
    let bin = model_bin(6, "WhisperSpec", &whisper_vars(d));
    let e = convert_err(&bin, GgmlType::Q8_0);
    assert!(
        matches!(e, ConvertError::NotQuantizable { row_len: 48, .. }),
        "{e}"
    );
    let dir = model_dir(&bin, &vocabulary_txt(d));
    convert(dir.path(), &dir.path().join("o.bin"), GgmlType::F16).expect("f16 has no such limit");
}

#[test]
fn bad_vocabulary_line_is_named() {
    let dir = model_dir(
        &model_bin(6, "WhisperSpec", &whisper_vars(DIMS)),
        "a\nb\nnot a token\n",
    );
    let e = convert(dir.path(), &dir.path().join("o.bin"), GgmlType::F16).unwrap_err();
    assert!(matches!(e, ConvertError::Vocabulary { line: 3, .. }), "{e}");
}

// ---------------------------------------------------------------------------
// The ggml reader on bad files

#[test]
fn ggml_reader_rejects_bad_files() {
    let dir = synthetic_dir();
    let out = dir.path().join("out.bin");
    convert(dir.path(), &out, GgmlType::Q8_0).unwrap();
    let good = std::fs::read(&out).unwrap();

    let mut bad = good.clone();
    bad[0] ^= 1;
    assert!(matches!(
        GgmlModel::parse(bad),
        Err(ConvertError::BadMagic { .. })
    ));
    for cut in [2, 30, 100, 70_000, good.len() - 1] {
        let e = GgmlModel::parse(good[..cut].to_vec()).unwrap_err();
        assert!(
            matches!(
                e,
                ConvertError::Truncated {
                    file: "ggml model",
                    ..
                }
            ),
            "cut {cut}: {e}"
        );
    }
    // Whole records dropped: parses, but is not what whisper.cpp loads.
    let m = GgmlModel::parse(good.clone()).unwrap();
    let last = m.tensors.last().unwrap();
    let record = 12 + 4 * last.ne.len() + last.name.len() + last.len;
    let short = GgmlModel::parse(good[..good.len() - record].to_vec()).unwrap();
    let e = short.validate().unwrap_err();
    assert!(
        e.to_string().contains("decoder.ln.bias") && e.to_string().contains("missing"),
        "{e}"
    );
}

// ---------------------------------------------------------------------------
// Pieces: mel filters, vocabulary, q8_0

/// FNV-1a over the little-endian bytes of f32s.
fn fnv(values: &[f32]) -> u64 {
    values
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .fold(0xcbf2_9ce4_8422_2325, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
        })
}

/// Whisper's own `mel_filters.npz` (openai-whisper 20250625, equal to
/// librosa 0.11 `filters.mel(sr=16000, n_fft=400, n_mels=…)`), summarised:
/// FNV-1a of all values, non-zero count, sum, each band's peak bin, and a
/// few exact values as f32 bits.
#[test]
fn mel_filters_equal_whispers_bit_for_bit() {
    let m = MelFilters::whisper(80);
    assert_eq!((m.n_mels, m.n_bins, m.data.len()), (80, 201, 80 * 201));
    assert_eq!(fnv(&m.data), 0x173a_8442_ad00_0426);
    assert_eq!(m.data.iter().filter(|&&v| v > 0.0).count(), 391);
    assert!(m.data.iter().all(|&v| v >= 0.0));
    assert_eq!(
        m.data[0].to_bits(),
        0x8000_0000,
        "librosa's -0.0 at band 0, bin 0"
    );
    let sum: f64 = m.data.iter().map(|&v| f64::from(v)).sum();
    assert!((sum - 1.999_024_092_387_117).abs() < 1e-12, "{sum}");
    let peaks: Vec<usize> = (0..80)
        .map(|r| {
            let row = m.row(r).unwrap();
            (0..201).fold(0, |best, k| if row[k] > row[best] { k } else { best })
        })
        .collect();
    #[rustfmt::skip]
    let want = [1, 2, 3, 4, 5, 6, 7, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 20, 21, 22, 23, 24,
        25, 26, 27, 28, 29, 30, 32, 33, 34, 36, 37, 38, 40, 41, 43, 45, 46, 48, 50, 52, 54, 56, 59, 61, 63, 66,
        68, 71, 74, 77, 80, 83, 86, 89, 93, 96, 100, 104, 108, 112, 117, 121, 126, 131, 136, 142, 147, 153, 159,
        165, 172, 178, 185, 192];
    assert_eq!(peaks, want);
    for (r, k, bits) in [
        (0, 1, 0x3ccb_aca4u32),
        (1, 2, 0x3cbb_5d95),
        (3, 4, 0x3c9a_bf79),
        (10, 10, 0x3ca3_168f),
        (40, 43, 0x3c71_6d72),
        (79, 190, 0x3b12_47ab),
        (79, 192, 0x3b4f_670e),
    ] {
        assert_eq!(m.row(r).unwrap()[k].to_bits(), bits, "band {r} bin {k}");
    }
    assert_eq!(m.row(79).unwrap()[200], 0.0);
    assert_eq!(
        fnv(&MelFilters::whisper(128).data),
        0x4319_6325_f8f5_1341,
        "large-v3's 128 bands"
    );
}

#[test]
fn slaney_mel_scale() {
    assert_eq!(hz_to_mel(0.0), 0.0);
    assert!((hz_to_mel(1000.0) - 15.0).abs() < 1e-12);
    assert!(
        (hz_to_mel(6400.0) - 42.0).abs() < 1e-9,
        "27 mels per factor 6.4 above 1 kHz"
    );
    for hz in [0.0, 40.0, 999.0, 1000.0, 3000.0, 8000.0] {
        assert!((mel_to_hz(hz_to_mel(hz)) - hz).abs() < 1e-9 * hz.max(1.0));
    }
}

#[test]
fn gpt2_byte_table() {
    let mut seen = std::collections::HashSet::new();
    for b in 0..=255u8 {
        let c = byte_to_unicode(b);
        assert!(
            !c.is_whitespace() && !c.is_control(),
            "byte {b} maps to a visible char"
        );
        assert!(seen.insert(c));
        assert_eq!(unicode_to_byte(c), Some(b));
    }
    assert_eq!(
        (
            byte_to_unicode(b' '),
            byte_to_unicode(b'\n'),
            byte_to_unicode(b'A')
        ),
        ('Ġ', 'Ċ', 'A')
    );
    assert_eq!(decode_token("ĠcafÃ©").as_deref(), Some(" café".as_bytes()));
    assert_eq!(unicode_to_byte('€'), None);
    let v = parse_vocabulary("a\r\nĠb\n\n<|endoftext|>\n<|en|>\n").unwrap();
    assert_eq!(v.tokens, [b"a".to_vec(), b" b".to_vec(), vec![]]);
    assert_eq!((v.total_lines, v.found_end_of_text), (5, true));
}

#[test]
fn q8_0_blocks() {
    let x: Vec<f32> = (0..32).map(|i| (i as f32 - 16.0) / 8.0).collect();
    let mut q = Vec::new();
    assert!(q8_0::quantize(&x, &mut q));
    assert_eq!(q.len(), 34);
    let d = f16::from_le_bytes([q[0], q[1]]).to_f32();
    assert!((d - 2.0 / 127.0).abs() < 1e-5, "scale is max|x| / 127");
    assert_eq!(q[2] as i8, -127, "the largest magnitude maps to ±127");
    assert_eq!(q[18] as i8, 0);
    let back = q8_0::dequantize(&q).unwrap();
    assert!(x
        .iter()
        .zip(&back)
        .all(|(a, b)| (a - b).abs() <= d / 2.0 + 1e-6));
    let mut z = Vec::new();
    assert!(q8_0::quantize(&[0.0; 64], &mut z));
    assert_eq!(q8_0::dequantize(&z).unwrap(), vec![0.0; 64]);
    assert!(!q8_0::quantize(&[1.0; 33], &mut Vec::new()));
    assert_eq!(q8_0::dequantize(&[0; 33]), None);
}

// ---------------------------------------------------------------------------
// Untrusted bytes never panic

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        let _ = Ct2Model::parse(&bytes);
        let mut prefixed = 6u32.to_le_bytes().to_vec();
        prefixed.extend_from_slice(&bytes);
        let _ = Ct2Model::parse(&prefixed);
        if let Ok(m) = GgmlModel::parse(bytes) {
            let _ = m.validate();
        }
    }
}

fn mutate(mut bytes: Vec<u8>, edits: &[(bool, usize, u8)], cut: Option<usize>) -> Vec<u8> {
    let len = bytes.len();
    for &(head, at, v) in edits {
        // Half the edits hit the first 2 KiB, where the names and shapes are.
        let i = if head { at % 2048.min(len) } else { at % len };
        bytes[i] = v;
    }
    if let Some(c) = cut {
        bytes.truncate(c % (len + 1));
    }
    bytes
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 40, ..ProptestConfig::default() })]

    #[test]
    fn mutated_model_bin_never_panics(
        edits in proptest::collection::vec((any::<bool>(), any::<usize>(), any::<u8>()), 1..6),
        cut in proptest::option::weighted(0.2, any::<usize>()),
    ) {
        let small = Dims { n: 32, layers: 1, ..DIMS };
        let bin = mutate(model_bin(6, "WhisperSpec", &whisper_vars(small)), &edits, cut);
        let dir = model_dir(&bin, &vocabulary_txt(small));
        let out = dir.path().join("o.bin");
        if convert(dir.path(), &out, GgmlType::Q8_0).is_ok() {
            GgmlModel::open(&out).unwrap().validate().unwrap();
        }
    }

    #[test]
    fn mutated_ggml_never_panics(
        edits in proptest::collection::vec((any::<bool>(), any::<usize>(), any::<u8>()), 1..6),
        cut in proptest::option::weighted(0.3, any::<usize>()),
    ) {
        let good = ggml_sample();
        if let Ok(m) = GgmlModel::parse(mutate(good.to_vec(), &edits, cut)) {
            let _ = m.validate();
            for t in &m.tensors {
                let _ = m.values(&t.name);
            }
        }
    }
}

/// A small converted model, made once.
fn ggml_sample() -> &'static [u8] {
    static SAMPLE: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
    SAMPLE.get_or_init(|| {
        let small = Dims {
            n: 32,
            layers: 1,
            ..DIMS
        };
        let dir = model_dir(
            &model_bin(6, "WhisperSpec", &whisper_vars(small)),
            &vocabulary_txt(small),
        );
        let out = dir.path().join("o.bin");
        convert(dir.path(), &out, GgmlType::Q8_0).unwrap();
        std::fs::read(Path::new(&out)).unwrap()
    })
}
