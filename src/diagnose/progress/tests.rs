use super::*;

fn at(secs: i64) -> Timestamp {
    Timestamp::from_second(1_800_000_000 + secs).unwrap()
}

/// Lines as `timestamps=true` serves them, `secs` after a fixed time.
fn log(lines: &[(i64, &str)]) -> String {
    lines
        .iter()
        .map(|(s, l)| format!("{} {l}\n", at(*s)))
        .collect()
}

#[test]
fn keras_progress_bars_count_over_the_epochs_with_the_stated_rate() {
    let text = log(&[
        (0, "Epoch 1/10"),
        (
            5,
            "500/500 [==============================] - 12s 24ms/step - loss: 0.5100",
        ),
        (6, "Epoch 2/10"),
        // A terminal's redraws in one line: the last state counts.
        (
            9,
            "100/500 [===>......] - ETA: 10s - loss: 0.45\r120/500 [====>.....] - ETA: 9s - loss: 0.4123",
        ),
    ]);
    let p = of_log(&text, None).unwrap();
    assert_eq!(p.step, 620);
    assert_eq!(p.total, Some(5000));
    assert_eq!((p.epoch, p.epochs), (Some(2), Some(10)));
    assert_eq!(p.loss, Some(0.4123));
    // 24 ms per step, as printed.
    assert!((p.rate.unwrap() - 41.666).abs() < 0.01, "{p:?}");
    assert_eq!(p.last_advance, Some(at(9)));
    assert_eq!(
        p.summary(),
        "step 620/5,000 (41.7/s, ETA 105s), epoch 2/10, loss 0.4123"
    );
}

#[test]
fn estimator_lines_give_step_loss_and_global_step_per_second() {
    let text = log(&[
        (0, "INFO:tensorflow:loss = 0.693, step = 100 (2.103 sec)"),
        (10, "INFO:tensorflow:global_step/sec: 12.5"),
        (10, "INFO:tensorflow:loss = 0.123, step = 225 (10.0 sec)"),
    ]);
    let p = of_log(&text, None).unwrap();
    assert_eq!(p.step, 225);
    assert_eq!(p.loss, Some(0.123));
    assert_eq!(p.rate, Some(12.5));
    assert_eq!(p.total, None);
    assert_eq!(p.eta(), None);
}

#[test]
fn custom_loops_print_steps_and_the_rate_comes_from_the_timestamps() {
    let text = log(&[
        (
            0,
            "INFO trainer.task: TF_CONFIG read, cluster of 1 ps + 3 workers",
        ),
        (0, "Step 100, loss 0.412"),
        (20, "step: 300/1000 epoch 2/4 loss=0.3"),
        (21, "saving a checkpoint"),
    ]);
    let p = of_log(&text, None).unwrap();
    assert_eq!(p.step, 300);
    assert_eq!(p.total, Some(1000));
    assert_eq!((p.epoch, p.epochs), (Some(2), Some(4)));
    assert_eq!(p.loss, Some(0.3));
    assert_eq!(p.rate, Some(10.0));
    assert_eq!(p.eta(), Some(Duration::from_secs(70)));
    // `global_step/sec`, `steps_per_epoch` and the like are not a step.
    assert_eq!(read_line("steps_per_epoch=500", None), None);
    assert_eq!(
        read_line("global_step/sec: 3", None).and_then(|r| r.step),
        None
    );
    assert_eq!(of_log(&log(&[(0, "no progress here")]), None), None);
}

#[test]
fn a_user_pattern_is_tried_first_and_needs_its_step_group() {
    let user = Regex::new(r"it=(?P<step>\d+) of (?P<total>\d+) nll=(?P<loss>[\d.]+)").unwrap();
    let text = log(&[
        (0, "it=10 of 40 nll=2.5"),
        (5, "it=30 of 40 nll=1.5"),
        (6, "step 99"),
    ]);
    let p = of_log(&text, Some(&user)).unwrap();
    // With a pattern, only the pattern is read.
    assert_eq!((p.step, p.total, p.loss), (30, Some(40), Some(1.5)));
    assert_eq!(p.rate, Some(4.0));
    assert_eq!(p.eta(), Some(Duration::from_millis(2500)));
}

#[test]
fn a_worker_whose_step_stopped_is_named_while_its_peers_advance() {
    let now = at(3600);
    let moving = |step, ago: i64| Progress {
        step,
        last_advance: Some(at(3600 - ago)),
        ..Progress::default()
    };
    let replicas = vec![
        ("worker-0".to_string(), moving(4100, 5)),
        ("worker-1".to_string(), moving(4090, 30)),
        ("worker-2".to_string(), moving(1200, 12 * 60)),
    ];
    assert_eq!(
        stalls(&replicas, now, STALL_AFTER),
        ["worker-2: no step for 12m (at step 1,200), peers at step 4,100"]
    );
    // None moves: the job is stuck, said once.
    let stuck = vec![
        ("worker-0".to_string(), moving(4100, 11 * 60)),
        ("worker-1".to_string(), moving(4000, 15 * 60)),
    ];
    assert_eq!(
        stalls(&stuck, now, STALL_AFTER),
        ["no replica has made a step for 11m (the furthest is at step 4,100)"]
    );
    // Lines without times say nothing about stalls; all moving is quiet.
    let untimed = vec![("worker-0".to_string(), Progress::default())];
    assert!(stalls(&untimed, now, STALL_AFTER).is_empty());
    assert!(stalls(&replicas[..2], now, STALL_AFTER).is_empty());
    assert_eq!(grouped(1_234_567), "1,234,567");
}

/// Issue 60 item 4: a job that logs a step every 15 minutes is judged by its own rhythm, not
/// a fixed 10 minutes: 20 minutes after its last line it has not stalled; past twice its
/// rhythm, with a peer moving, it has.
#[test]
fn a_stall_is_judged_against_the_jobs_own_cadence() {
    let lines = |last: i64| {
        log(&[
            (last - 1800, "step 100"),
            (last - 900, "step 200"),
            (last, "step 300"),
        ])
    };
    let slow = of_log(&lines(0), None).unwrap();
    assert_eq!(slow.cadence, Some(Duration::from_secs(900)));
    let peer = of_log(&lines(1200), None).unwrap();
    let replicas = vec![
        ("worker-0".to_string(), slow.clone()),
        ("worker-1".to_string(), peer.clone()),
    ];
    // 20 minutes after worker-0's last line (a fixed 10-minute window called it a stall).
    assert!(stalls(&replicas, at(1200), STALL_AFTER).is_empty());
    // 31 minutes after it, while worker-1 logged a minute ago: a stall.
    let later = vec![
        ("worker-0".to_string(), slow),
        ("worker-1".to_string(), of_log(&lines(1800), None).unwrap()),
    ];
    assert_eq!(
        stalls(&later, at(1860), STALL_AFTER),
        ["worker-0: no step for 31m (at step 300), peers at step 300"]
    );
}

/// Issue 61 item 9: `fit(verbose=2)` prints no bar, one line per epoch; the epochs are the
/// progress (Keras 2 and Keras 3 word the line differently).
#[test]
fn keras_verbose_2_counts_one_line_per_epoch() {
    for (first, second) in [
        (
            "1875/1875 - 4s - loss: 0.2985 - accuracy: 0.9135 - 4s/epoch - 2ms/step",
            "1875/1875 - 3s - loss: 0.1410 - accuracy: 0.9580 - 3s/epoch - 2ms/step",
        ),
        (
            "1875/1875 - 4s - 2ms/step - accuracy: 0.9135 - loss: 0.2985",
            "1875/1875 - 3s - 2ms/step - accuracy: 0.9580 - loss: 0.1410",
        ),
    ] {
        let text = log(&[(0, "Epoch 1/5"), (4, first), (5, "Epoch 2/5"), (8, second)]);
        let p = of_log(&text, None).unwrap();
        assert_eq!((p.step, p.total), (3750, Some(9375)), "{second}");
        assert_eq!((p.epoch, p.epochs), (Some(2), Some(5)));
        assert_eq!(p.loss, Some(0.1410));
        assert!((p.rate.unwrap() - 500.0).abs() < 0.01, "{p:?}");
    }
    // A line that only looks like a fraction is not a step.
    assert_eq!(read_line("10/20 - retrying", None).map(|r| r.step), None);
}
