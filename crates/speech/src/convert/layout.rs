//! What whisper.cpp expects: the hyper-parameters, and every tensor with its
//! name, shape, type and the CTranslate2 variable it comes from.
//!
//! Whisper is an encoder (audio → features) and a decoder (features + text
//! so far → next token), both stacks of transformer blocks. whisper.cpp
//! names tensors like OpenAI's PyTorch checkpoint
//! (`encoder.blocks.0.attn.query.weight`); CTranslate2 renames them and
//! fuses some:
//!
//! | whisper.cpp (per block `i`)        | CTranslate2 (`…/layer_i/…`)                     |
//! |------------------------------------|-------------------------------------------------|
//! | `attn_ln.{weight,bias}`            | `self_attention/layer_norm/{gamma,beta}`        |
//! | `attn.{query,key,value}`           | `self_attention/linear_0`: q, k, v stacked rows |
//! | `attn.out`                         | `self_attention/linear_1`                       |
//! | `cross_attn_ln` (decoder)          | `attention/layer_norm`                          |
//! | `cross_attn.query` (decoder)       | `attention/linear_0`                            |
//! | `cross_attn.{key,value}` (decoder) | `attention/linear_1`: k, v stacked rows         |
//! | `cross_attn.out` (decoder)         | `attention/linear_2`                            |
//! | `mlp_ln`                           | `ffn/layer_norm`                                |
//! | `mlp.0`, `mlp.2`                   | `ffn/linear_0`, `ffn/linear_1`                  |
//!
//! Whisper's key projections have no bias; CTranslate2 stores zeros in the
//! fused bias, which we drop. Linear weights are `[out, in]` in both, and
//! the data is row-major in both, so the bytes carry over unchanged — ggml
//! just lists the dimensions innermost first (`[in, out]`).
//!
//! Types follow whisper.cpp's loader exactly (it rejects anything else):
//! the matrices of the blocks and the token embedding are the *weight type*
//! (f16 or q8_0), the convolution kernels are always f16, and everything
//! else — biases, layer norms, positional embeddings — is f32. The
//! convolution biases are stored as `[n, 1]` matrices.

use super::ct2::Ct2Model;
use super::error::ConvertError;
use super::ggml::{GgmlType, TensorType};

/// whisper.cpp's hyper-parameters, in file order (`ftype` aside).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HParams {
    /// Token embedding rows: 51864 for English-only models.
    pub n_vocab: i32,
    /// Encoder positions: 1500 (30 s of audio at 50 frames per second).
    pub n_audio_ctx: i32,
    /// Encoder width (384 for tiny).
    pub n_audio_state: i32,
    pub n_audio_head: i32,
    pub n_audio_layer: i32,
    /// Decoder positions: 448 tokens.
    pub n_text_ctx: i32,
    /// Decoder width; whisper.cpp requires it to equal `n_audio_state`.
    pub n_text_state: i32,
    pub n_text_head: i32,
    pub n_text_layer: i32,
    /// Mel bands of the input spectrogram (80).
    pub n_mels: i32,
}

impl HParams {
    /// The ten values in the order of the file's header.
    pub fn in_file_order(&self) -> [i32; 10] {
        [
            self.n_vocab,
            self.n_audio_ctx,
            self.n_audio_state,
            self.n_audio_head,
            self.n_audio_layer,
            self.n_text_ctx,
            self.n_text_state,
            self.n_text_head,
            self.n_text_layer,
            self.n_mels,
        ]
    }
}

fn dim(name: &str, what: &str, v: usize) -> Result<i32, ConvertError> {
    match i32::try_from(v) {
        Ok(v) if v > 0 => Ok(v),
        _ => Err(ConvertError::HyperParameters(format!(
            "{what} is {v} (from {name}); it must be between 1 and {}",
            i32::MAX
        ))),
    }
}

/// The shape of variable `name`, which must have `N` dimensions.
fn shape_of<const N: usize>(model: &Ct2Model<'_>, name: &str) -> Result<[usize; N], ConvertError> {
    let v = model.require(name)?;
    <[usize; N]>::try_from(v.shape.as_slice()).map_err(|_| {
        ConvertError::HyperParameters(format!(
            "{name} has shape {:?}; expected {N} dimensions",
            v.shape
        ))
    })
}

/// Number of consecutive `{prefix}/layer_{i}` blocks.
fn count_layers(model: &Ct2Model<'_>, prefix: &str) -> usize {
    (0..)
        .take_while(|i| {
            model
                .get(&format!(
                    "{prefix}/layer_{i}/self_attention/linear_0/weight"
                ))
                .is_some()
        })
        .count()
}

fn heads(model: &Ct2Model<'_>, name: &str, state: i32) -> Result<i32, ConvertError> {
    let n = model.require(name)?.to_int()?;
    match i32::try_from(n) {
        Ok(h) if h > 0 && state % h == 0 => Ok(h),
        _ => Err(ConvertError::HyperParameters(format!(
            "{name} is {n}, which does not divide the width {state}"
        ))),
    }
}

impl HParams {
    /// Reads the hyper-parameters off a Whisper CTranslate2 model: sizes from
    /// the shapes of the embeddings and convolutions, layer counts from the
    /// block names, head counts from the `num_heads` scalars.
    pub fn from_ct2(model: &Ct2Model<'_>) -> Result<HParams, ConvertError> {
        let conv1 = "encoder/conv1/weight";
        let [a_state, mels, k] = shape_of(model, conv1)?;
        if k != 3 {
            return Err(ConvertError::ShapeMismatch {
                name: conv1.into(),
                expected: vec![a_state, mels, 3],
                found: vec![a_state, mels, k],
            });
        }
        let enc_pos = "encoder/position_encodings/encodings";
        let [audio_ctx, _] = shape_of(model, enc_pos)?;
        let emb = "decoder/embeddings/weight";
        let [vocab, t_state] = shape_of(model, emb)?;
        let dec_pos = "decoder/position_encodings/encodings";
        let [text_ctx, _] = shape_of(model, dec_pos)?;

        let n_audio_state = dim(conv1, "the encoder width", a_state)?;
        let n_text_state = dim(emb, "the decoder width", t_state)?;
        if n_audio_state != n_text_state {
            return Err(ConvertError::HyperParameters(format!(
                "encoder width {n_audio_state} differs from decoder width {n_text_state}; whisper.cpp needs them equal"
            )));
        }
        Ok(HParams {
            n_vocab: dim(emb, "the vocabulary size", vocab)?,
            n_audio_ctx: dim(enc_pos, "the audio context", audio_ctx)?,
            n_audio_state,
            n_audio_head: heads(model, "encoder/num_heads", n_audio_state)?,
            n_audio_layer: dim(
                "encoder/layer_*",
                "the encoder layer count",
                count_layers(model, "encoder"),
            )?,
            n_text_ctx: dim(dec_pos, "the text context", text_ctx)?,
            n_text_state,
            n_text_head: heads(model, "decoder/num_heads", n_text_state)?,
            n_text_layer: dim(
                "decoder/layer_*",
                "the decoder layer count",
                count_layers(model, "decoder"),
            )?,
            n_mels: dim(conv1, "the mel band count", mels)?,
        })
    }

    /// whisper.cpp's name for the model size, from the encoder depth.
    pub fn model_name(&self) -> &'static str {
        match self.n_audio_layer {
            4 => "tiny",
            6 => "base",
            12 => "small",
            24 => "medium",
            32 => "large",
            _ => "unknown",
        }
    }

    /// The id whisper.cpp gives `<|endoftext|>`: it assumes the ordinary
    /// vocabulary ends there.
    pub fn end_of_text_id(&self) -> usize {
        if self.n_vocab >= 51865 {
            50257
        } else {
            50256
        }
    }
}

/// Where a tensor's values come from in `model.bin`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Source {
    /// The CTranslate2 variable.
    pub var: String,
    /// Its full shape (checked before conversion).
    pub shape: Vec<usize>,
    /// Slice `part` of `parts` equal slices along the outermost dimension.
    pub part: usize,
    pub parts: usize,
}

/// One tensor of the ggml file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TensorSpec {
    /// whisper.cpp's name.
    pub name: String,
    /// Outermost dimension first (PyTorch order; ggml lists it reversed).
    pub shape: Vec<usize>,
    pub ty: TensorType,
    pub source: Source,
}

struct Plan {
    weight: TensorType,
    out: Vec<TensorSpec>,
}

impl Plan {
    fn push(
        &mut self,
        name: String,
        shape: Vec<usize>,
        ty: TensorType,
        var: String,
        src: Vec<usize>,
        part: (usize, usize),
    ) {
        let source = Source {
            var,
            shape: src,
            part: part.0,
            parts: part.1,
        };
        self.out.push(TensorSpec {
            name,
            shape,
            ty,
            source,
        });
    }

    /// A plain copy of a variable.
    fn copy(&mut self, name: String, var: String, shape: &[usize], ty: TensorType) {
        self.push(name, shape.to_vec(), ty, var, shape.to_vec(), (0, 1));
    }

    /// A layer norm: `gamma`/`beta` → `weight`/`bias`.
    fn norm(&mut self, out: &str, ct2: &str, n: usize) {
        self.copy(
            format!("{out}.weight"),
            format!("{ct2}/gamma"),
            &[n],
            TensorType::F32,
        );
        self.copy(
            format!("{out}.bias"),
            format!("{ct2}/beta"),
            &[n],
            TensorType::F32,
        );
    }

    /// A linear layer `[n_out, n_in]` with its bias.
    fn linear(&mut self, out: &str, ct2: &str, n_out: usize, n_in: usize) {
        self.copy(
            format!("{out}.weight"),
            format!("{ct2}/weight"),
            &[n_out, n_in],
            self.weight,
        );
        self.copy(
            format!("{out}.bias"),
            format!("{ct2}/bias"),
            &[n_out],
            TensorType::F32,
        );
    }

    /// Projection `part` of `parts` square `n × n` projections stacked in
    /// one CTranslate2 linear layer, with its bias unless `bias` is false.
    fn stacked(
        &mut self,
        out: &str,
        ct2: &str,
        n: usize,
        (part, parts): (usize, usize),
        bias: bool,
    ) {
        let w = (format!("{out}.weight"), format!("{ct2}/weight"));
        self.push(
            w.0,
            vec![n, n],
            self.weight,
            w.1,
            vec![parts * n, n],
            (part, parts),
        );
        if bias {
            let b = (format!("{out}.bias"), format!("{ct2}/bias"));
            self.push(
                b.0,
                vec![n],
                TensorType::F32,
                b.1,
                vec![parts * n],
                (part, parts),
            );
        }
    }

    fn mlp(&mut self, out: &str, ct2: &str, n: usize) {
        self.norm(
            &format!("{out}.mlp_ln"),
            &format!("{ct2}/ffn/layer_norm"),
            n,
        );
        self.linear(
            &format!("{out}.mlp.0"),
            &format!("{ct2}/ffn/linear_0"),
            4 * n,
            n,
        );
        self.linear(
            &format!("{out}.mlp.2"),
            &format!("{ct2}/ffn/linear_1"),
            n,
            4 * n,
        );
    }

    fn self_attention(&mut self, out: &str, ct2: &str, n: usize) {
        let sa = format!("{ct2}/self_attention");
        self.norm(&format!("{out}.attn_ln"), &format!("{sa}/layer_norm"), n);
        self.stacked(
            &format!("{out}.attn.query"),
            &format!("{sa}/linear_0"),
            n,
            (0, 3),
            true,
        );
        self.stacked(
            &format!("{out}.attn.key"),
            &format!("{sa}/linear_0"),
            n,
            (1, 3),
            false,
        );
        self.stacked(
            &format!("{out}.attn.value"),
            &format!("{sa}/linear_0"),
            n,
            (2, 3),
            true,
        );
        self.linear(&format!("{out}.attn.out"), &format!("{sa}/linear_1"), n, n);
    }

    fn cross_attention(&mut self, out: &str, ct2: &str, n: usize) {
        let ca = format!("{ct2}/attention");
        self.norm(
            &format!("{out}.cross_attn_ln"),
            &format!("{ca}/layer_norm"),
            n,
        );
        self.linear(
            &format!("{out}.cross_attn.query"),
            &format!("{ca}/linear_0"),
            n,
            n,
        );
        self.stacked(
            &format!("{out}.cross_attn.key"),
            &format!("{ca}/linear_1"),
            n,
            (0, 2),
            false,
        );
        self.stacked(
            &format!("{out}.cross_attn.value"),
            &format!("{ca}/linear_1"),
            n,
            (1, 2),
            true,
        );
        self.linear(
            &format!("{out}.cross_attn.out"),
            &format!("{ca}/linear_2"),
            n,
            n,
        );
    }
}

fn to_usize(v: i32) -> usize {
    usize::try_from(v).unwrap_or(0)
}

/// Every tensor whisper.cpp loads for a model with these hyper-parameters
/// and weight type, in the order we write them.
pub fn whisper_tensors(hp: &HParams, kind: GgmlType) -> Vec<TensorSpec> {
    let n = to_usize(hp.n_audio_state);
    let mut p = Plan {
        weight: kind.weight_type(),
        out: Vec::new(),
    };
    let f32 = TensorType::F32;

    p.copy(
        "encoder.positional_embedding".into(),
        "encoder/position_encodings/encodings".into(),
        &[to_usize(hp.n_audio_ctx), n],
        f32,
    );
    for (conv, n_in) in [("conv1", to_usize(hp.n_mels)), ("conv2", n)] {
        p.copy(
            format!("encoder.{conv}.weight"),
            format!("encoder/{conv}/weight"),
            &[n, n_in, 3],
            TensorType::F16,
        );
        p.push(
            format!("encoder.{conv}.bias"),
            vec![n, 1],
            f32,
            format!("encoder/{conv}/bias"),
            vec![n],
            (0, 1),
        );
    }
    for i in 0..to_usize(hp.n_audio_layer) {
        let (out, ct2) = (format!("encoder.blocks.{i}"), format!("encoder/layer_{i}"));
        p.self_attention(&out, &ct2, n);
        p.mlp(&out, &ct2, n);
    }
    p.norm("encoder.ln_post", "encoder/layer_norm", n);

    let n = to_usize(hp.n_text_state);
    p.copy(
        "decoder.positional_embedding".into(),
        "decoder/position_encodings/encodings".into(),
        &[to_usize(hp.n_text_ctx), n],
        f32,
    );
    let emb = "decoder/embeddings/weight".to_string();
    p.copy(
        "decoder.token_embedding.weight".into(),
        emb,
        &[to_usize(hp.n_vocab), n],
        p.weight,
    );
    for i in 0..to_usize(hp.n_text_layer) {
        let (out, ct2) = (format!("decoder.blocks.{i}"), format!("decoder/layer_{i}"));
        p.self_attention(&out, &ct2, n);
        p.cross_attention(&out, &ct2, n);
        p.mlp(&out, &ct2, n);
    }
    p.norm("decoder.ln", "decoder/layer_norm", n);
    p.out
}

/// The bias slices we drop because whisper.cpp has no key biases:
/// `(variable, part, parts)`. They should be zeros.
pub fn dropped_key_biases(hp: &HParams) -> Vec<(String, usize, usize)> {
    let enc = (0..to_usize(hp.n_audio_layer)).map(|i| {
        (
            format!("encoder/layer_{i}/self_attention/linear_0/bias"),
            1,
            3,
        )
    });
    let dec = (0..to_usize(hp.n_text_layer)).flat_map(|i| {
        [
            (
                format!("decoder/layer_{i}/self_attention/linear_0/bias"),
                1,
                3,
            ),
            (format!("decoder/layer_{i}/attention/linear_1/bias"), 0, 2),
        ]
    });
    enc.chain(dec).collect()
}
