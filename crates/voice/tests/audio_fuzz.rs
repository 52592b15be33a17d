//! No panic on any caller audio: arbitrary frames (empty, odd byte counts,
//! huge, wrong or unsupported rates, either encoding) go through the real
//! audio chain (µ-law decode → input resampling → earshot VAD → codec STT,
//! and the telephone's own: VAD straight on the socket's audio → codec
//! STT, each decoding what it needs) and the pipeline still ends
//! gracefully.

use proptest::prelude::*;
use std::time::Duration;
use voice::frames::{Audio, Frame};
use voice::stages::{mulaw::MuLawDecode, resample::InputResample, stt::SttStage, vad::VadStage};
use voice::testkit::MockStt;
use voice::Pipeline;

fn audio_strategy() -> impl Strategy<Value = Audio> {
    let bytes = prop_oneof![
        8 => proptest::collection::vec(any::<u8>(), 0..700),
        1 => proptest::collection::vec(any::<u8>(), 0..70_000),
    ];
    let rate = prop_oneof![
        Just(8000u32),
        Just(16000),
        Just(24000),
        Just(0),
        Just(44100),
        any::<u32>()
    ];
    (bytes, rate, any::<bool>()).prop_map(|(b, rate, mulaw)| {
        if mulaw {
            Audio::mulaw(b, rate)
        } else {
            Audio::pcm16(b, rate)
        }
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn any_caller_audio_is_survived(frames in proptest::collection::vec(audio_strategy(), 0..40)) {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let report = rt.block_on(async move {
            let vad = audio::vad::Vad::new(audio::vad::VadParams::default(), 16_000).unwrap();
            let p = Pipeline::builder()
                .stage(MuLawDecode)
                .stage(InputResample::new(16_000))
                .stage(VadStage::new(vad))
                .stage(SttStage::new(MockStt::default()))
                .build();
            feed_and_end(p, frames).await
        });
        prop_assert!(report.graceful, "{report:?}");
    }

    #[test]
    fn any_caller_audio_straight_from_the_socket_is_survived(
        frames in proptest::collection::vec(audio_strategy(), 0..40),
        codec in any::<bool>(),
    ) {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let report = rt.block_on(async move {
            let detector: Box<dyn voice::stages::vad::SpeechDetector> = if codec {
                Box::new(voice::testkit::CodecDetector::default())
            } else {
                Box::new(audio::vad::Vad::new(audio::vad::VadParams::default(), 8000).unwrap())
            };
            let p = Pipeline::builder()
                .stage(VadStage::new(detector))
                .stage(SttStage::new(MockStt::default()))
                .build();
            feed_and_end(p, frames).await
        });
        prop_assert!(report.graceful, "{report:?}");
    }
}

/// Send every frame as caller audio, hang up, and end the pipeline.
async fn feed_and_end(mut p: Pipeline, frames: Vec<Audio>) -> voice::StopReport {
    let input = p.input().unwrap().clone();
    for a in frames {
        input.send(Frame::input_audio(a)).await.unwrap();
    }
    drop(input);
    p.end(Duration::from_secs(10)).await
}
