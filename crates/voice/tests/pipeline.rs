//! The pipeline runner: ordering, barge-in, lifecycle, failure.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use voice::frames::{ControlFrame, Data, Frame, UtteranceText};
use voice::passthrough::PassThrough;
use voice::{Ctx, Direction, Lifecycle, Pipeline, Stage};

fn speak(epoch: u64, s: &str) -> Frame {
    Frame::data(
        epoch,
        Data::Speak(UtteranceText {
            id: 1,
            text: s.into(),
        }),
    )
}

fn text_of(f: &Frame) -> Option<String> {
    match f {
        Frame::Data(d) => match &d.data {
            Data::Speak(t) => Some(t.text.to_string()),
            _ => None,
        },
        _ => None,
    }
}

async fn drain_texts(p: &mut Pipeline) -> Vec<String> {
    let tail = p.tail().unwrap();
    let mut out = Vec::new();
    while let Some(f) = tail.recv().await {
        if let Some(t) = text_of(&f) {
            out.push(t);
        }
        if matches!(f, Frame::Control(ControlFrame::End)) {
            break;
        }
    }
    out
}

#[tokio::test]
async fn frames_arrive_in_order_through_many_stages_and_end_drains() {
    let mut b = Pipeline::builder().capacity(4).tail(1024);
    for _ in 0..10 {
        b = b.stage(PassThrough);
    }
    let mut p = b.build();
    let input = p.input().unwrap().clone();
    for i in 0..200 {
        input.send(speak(0, &i.to_string())).await.unwrap();
    }
    drop(input);
    let report = p.end(Duration::from_secs(5)).await;
    assert!(report.graceful, "{report:?}");
    assert_eq!(p.state(), Lifecycle::Stopped);
    let want: Vec<String> = (0..200).map(|i| i.to_string()).collect();
    assert_eq!(drain_texts(&mut p).await, want);
}

#[tokio::test]
async fn barge_in_drops_stale_frames_wherever_they_wait() {
    // Stage 0 passes, the tail is small, so frames queue up in inboxes.
    let mut p = Pipeline::builder()
        .capacity(8)
        .stage(PassThrough)
        .stage(PassThrough)
        .stage(PassThrough)
        .tail(2)
        .build();
    let input = p.input().unwrap().clone();
    for i in 0..12 {
        input.send(speak(0, &format!("old{i}"))).await.unwrap();
    }
    tokio::task::yield_now().await;
    let epoch = p.scope().interrupt();
    assert_eq!(epoch, 1);
    input.send(speak(1, "new")).await.unwrap();
    let mut texts = Vec::new();
    let tail = p.tail().unwrap();
    while let Ok(Some(f)) = tokio::time::timeout(Duration::from_secs(1), tail.recv()).await {
        if let Some(t) = text_of(&f) {
            let done = t == "new";
            texts.push(t);
            if done {
                break;
            }
        }
    }
    let old = texts.iter().filter(|t| t.starts_with("old")).count();
    assert!(old <= 2, "{texts:?}");
    assert_eq!(texts.last().map(String::as_str), Some("new"), "{texts:?}");
}

#[tokio::test]
async fn stale_frames_sent_after_the_barge_in_never_reach_a_stage() {
    let seen = Arc::new(AtomicUsize::new(0));
    struct Count(Arc<AtomicUsize>);
    impl Stage for Count {
        fn name(&self) -> &'static str {
            "count"
        }
        fn handle(&mut self, frame: Frame, dir: Direction, ctx: &mut Ctx<'_>) {
            if let Frame::Data(_) = frame {
                self.0.fetch_add(1, Ordering::SeqCst);
            }
            ctx.pass(frame, dir);
        }
    }
    let mut p = Pipeline::builder()
        .stage(PassThrough)
        .stage(Count(seen.clone()))
        .build();
    p.scope().interrupt();
    let input = p.input().unwrap().clone();
    input.send(speak(0, "stale")).await.unwrap();
    input.send(speak(1, "fresh")).await.unwrap();
    drop(input);
    assert!(p.end(Duration::from_secs(1)).await.graceful);
    assert_eq!(seen.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn cancel_stops_at_once_even_with_a_full_pipeline() {
    let mut p = Pipeline::builder()
        .capacity(1)
        .stage(PassThrough)
        .stage(PassThrough)
        .tail(1)
        .build();
    let input = p.input().unwrap().clone();
    // Fill everything; the feeder ends up blocked on backpressure.
    let feeder = tokio::spawn(async move {
        let mut sent = 0;
        while input.send(speak(0, "x")).await.is_ok() {
            sent += 1;
        }
        sent
    });
    tokio::time::sleep(Duration::from_millis(20)).await;
    assert!(!feeder.is_finished(), "backpressure holds the feeder");
    let report = p.cancel(Duration::from_millis(100)).await;
    assert!(report.aborted.is_empty(), "{report:?}");
    assert_eq!(p.state(), Lifecycle::Stopped);
    drop(p);
    let sent = tokio::time::timeout(Duration::from_secs(1), feeder)
        .await
        .expect("feeder released")
        .unwrap();
    assert!(sent >= 3, "{sent}");
}

#[tokio::test]
async fn a_panicking_stage_cancels_the_whole_call() {
    struct Boom;
    impl Stage for Boom {
        fn name(&self) -> &'static str {
            "boom"
        }
        fn handle(&mut self, frame: Frame, _dir: Direction, _ctx: &mut Ctx<'_>) {
            if let Frame::Data(_) = frame {
                panic!("boom");
            }
        }
    }
    let mut p = Pipeline::builder().stage(PassThrough).stage(Boom).build();
    let input = p.input().unwrap().clone();
    input.send(speak(0, "a")).await.unwrap();
    // The next frame finds Boom gone: stage 0 cancels the call.
    let _ = input.send(speak(0, "b")).await;
    tokio::time::timeout(Duration::from_secs(1), p.scope().call_token().cancelled())
        .await
        .expect("call cancelled");
    let report = p.end(Duration::from_millis(100)).await;
    assert!(!report.graceful);
}

#[tokio::test]
async fn every_stage_sees_start_first_and_upstream_frames_travel_up() {
    let log = Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    struct Log(&'static str, Arc<std::sync::Mutex<Vec<String>>>);
    impl Stage for Log {
        fn name(&self) -> &'static str {
            self.0
        }
        fn handle(&mut self, frame: Frame, dir: Direction, ctx: &mut Ctx<'_>) {
            self.1
                .lock()
                .unwrap()
                .push(format!("{}:{}:{:?}", self.0, frame.name(), dir));
            if self.0 == "b" && matches!(frame, Frame::Data(_)) {
                ctx.push_up(Frame::Control(ControlFrame::BotStoppedSpeaking));
            }
            ctx.pass(frame, dir);
        }
    }
    let mut p = Pipeline::builder()
        .stage(Log("a", log.clone()))
        .stage(Log("b", log.clone()))
        .build();
    let input = p.input().unwrap().clone();
    input.send(speak(0, "x")).await.unwrap();
    tokio::time::sleep(Duration::from_millis(10)).await;
    drop(input);
    assert!(p.end(Duration::from_secs(1)).await.graceful);
    let log = log.lock().unwrap().clone();
    assert_eq!(log[0].split(':').nth(1), Some("start"), "{log:?}");
    assert!(
        log.contains(&"a:bot_stopped_speaking:Upstream".to_string()),
        "{log:?}"
    );
    assert!(log.contains(&"b:end:Downstream".to_string()), "{log:?}");
}

#[tokio::test]
async fn a_stage_put_on_another_runtime_runs_there_in_line_and_stops_with_the_call() {
    // Which thread handled each data frame, and each upstream reply.
    let seen = Arc::new(std::sync::Mutex::new(Vec::<(String, String)>::new()));
    struct Where(&'static str, Arc<std::sync::Mutex<Vec<(String, String)>>>);
    impl Stage for Where {
        fn name(&self) -> &'static str {
            self.0
        }
        fn handle(&mut self, frame: Frame, dir: Direction, ctx: &mut Ctx<'_>) {
            let thread = std::thread::current().name().unwrap_or("").to_string();
            if let Frame::Control(ControlFrame::BotStoppedSpeaking) = frame {
                self.1
                    .lock()
                    .unwrap()
                    .push((format!("{}:up", self.0), thread));
            } else if let Some(t) = text_of(&frame) {
                self.1
                    .lock()
                    .unwrap()
                    .push((format!("{}:{t}", self.0), thread));
                if self.0 == "last" {
                    ctx.push_up(Frame::Control(ControlFrame::BotStoppedSpeaking));
                }
            }
            ctx.pass(frame, dir);
        }
    }
    // A runtime of its own, as a server's playout thread is.
    let other = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("other-runtime")
        .enable_all()
        .build()
        .unwrap();
    let mut p = Pipeline::builder()
        .capacity(2)
        .tail(1024)
        .stage(Where("first", seen.clone()))
        .stage_on(Where("last", seen.clone()), Some(other.handle().clone()))
        .build();
    // The threads that handled what a stage saw (`"last:"`: its frames;
    // `"first:up"`: the replies that reached the first stage).
    let threads = |what: &str| -> Vec<String> {
        seen.lock()
            .unwrap()
            .iter()
            .filter(|(s, _)| s.starts_with(what))
            .map(|(_, t)| t.clone())
            .collect()
    };
    let input = p.input().unwrap().clone();
    for i in 0..50 {
        input.send(speak(0, &i.to_string())).await.unwrap();
    }
    // What the stage on the other runtime sends upstream reaches the stage
    // before it, on its own runtime (waited for: once the first stage has
    // stopped, a reply has nowhere to go).
    tokio::time::timeout(Duration::from_secs(30), async {
        while threads("first:up").len() < 50 {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("{} of 50 replies came back", threads("first:up").len()));
    drop(input);
    assert!(p.end(Duration::from_secs(5)).await.graceful);
    // Every frame arrived, in order, through the stage on the other runtime.
    let want: Vec<String> = (0..50).map(|i| i.to_string()).collect();
    assert_eq!(drain_texts(&mut p).await, want);
    let (last, first) = (threads("last:"), threads("first:"));
    assert_eq!(last.len(), 50, "{last:?}");
    assert!(last.iter().all(|t| t == "other-runtime"), "{last:?}");
    // The first stage saw the 50 frames and the 50 replies, all at home.
    assert_eq!(first.len(), 100, "{first:?}");
    assert!(first.iter().all(|t| t != "other-runtime"), "{first:?}");

    // Cancelling the call stops a stage on the other runtime too.
    let mut p = Pipeline::builder()
        .stage(PassThrough)
        .stage_on(PassThrough, Some(other.handle().clone()))
        .build();
    let report = p.cancel(Duration::from_secs(5)).await;
    assert!(report.aborted.is_empty(), "{report:?}");
    assert_eq!(p.state(), Lifecycle::Stopped);
    drop(p);

    // A stage whose runtime has shut down never runs: the call is
    // cancelled, not left without its output.
    let gone = other.handle().clone();
    other.shutdown_background();
    let mut p = Pipeline::builder()
        .stage(PassThrough)
        .stage_on(PassThrough, Some(gone))
        .build();
    tokio::time::timeout(Duration::from_secs(30), p.scope().call_token().cancelled())
        .await
        .expect("the call is cancelled");
    assert!(!p.end(Duration::from_secs(5)).await.graceful);
}
