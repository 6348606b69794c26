import Foundation
import Testing
@testable import HeraldCore

@Suite struct EpisodesTests {
    let since = day("2026-02-01")
    let other = UUID(uuidString: "00000000-0000-0000-0000-0000000000e2")!

    func evaluation(since: LocalDate, duration: Int) -> EpisodeEvaluation {
        let level = EpisodeEvaluation.level(forDuration: duration)!
        return EpisodeEvaluation(activeSince: since, duration: duration, level: level, severity: Severity(level: level),
                                 baseline: 420, recent: 126, deviationPercent: -70,
                                 latest: since.adding(days: duration - 1))
    }

    @Test func newEpisodeNotifiesItsLevel() {
        let e = evaluation(since: since, duration: 4)
        #expect(Episodes.plan(active: [], evaluation: e) == EpisodePlan(upsert: e, notifyLevel: 3))
    }

    @Test func continuingAtTheSameLevelDoesNotNotify() {
        let e = evaluation(since: since, duration: 5)
        let stored = StoredEpisode(id: episodeId, activeSince: since, level: 3, lastNotifiedLevel: 3)
        #expect(Episodes.plan(active: [stored], evaluation: e) == EpisodePlan(upsert: e, continuing: episodeId))
    }

    @Test func levelRiseNotifiesOnce() {
        let e = evaluation(since: since, duration: 7)
        let before = StoredEpisode(id: episodeId, activeSince: since, level: 3, lastNotifiedLevel: 3)
        #expect(Episodes.plan(active: [before], evaluation: e).notifyLevel == 7)
        let after = StoredEpisode(id: episodeId, activeSince: since, level: 7, lastNotifiedLevel: 7)
        #expect(Episodes.plan(active: [after], evaluation: e).notifyLevel == nil)
    }

    @Test func shadowModeLeftTheLevelUnnotified() {
        // Levels reached while nothing was notified are notified at the current level only.
        let e = evaluation(since: since, duration: 15)
        let stored = StoredEpisode(id: episodeId, activeSince: since, level: 7, lastNotifiedLevel: 0)
        #expect(Episodes.plan(active: [stored], evaluation: e).notifyLevel == 14)
    }

    @Test func runEndedResolves() {
        let stored = StoredEpisode(id: episodeId, activeSince: since, level: 7, lastNotifiedLevel: 7)
        #expect(Episodes.plan(active: [stored], evaluation: nil) == EpisodePlan(resolve: [episodeId]))
        #expect(Episodes.plan(active: [], evaluation: nil) == EpisodePlan())
    }

    @Test func laterRunReplacesTheActiveEpisode() {
        let e = evaluation(since: since.adding(days: 20), duration: 3)
        let stored = StoredEpisode(id: episodeId, activeSince: since, level: 14, lastNotifiedLevel: 14)
        let plan = Episodes.plan(active: [stored], evaluation: e)
        #expect(plan == EpisodePlan(resolve: [episodeId], upsert: e, continuing: nil, notifyLevel: 3))
    }

    @Test func onlyTheMatchingEpisodeContinues() {
        let e = evaluation(since: since, duration: 8)
        let stale = StoredEpisode(id: other, activeSince: since.adding(days: -30), level: 3, lastNotifiedLevel: 3)
        let current = StoredEpisode(id: episodeId, activeSince: since, level: 7, lastNotifiedLevel: 3)
        let plan = Episodes.plan(active: [stale, current], evaluation: e)
        #expect(plan == EpisodePlan(resolve: [other], upsert: e, continuing: episodeId, notifyLevel: 7))
    }

    @Test func aRunJoinedUpAgainReopensItsResolvedEpisodeWithoutRepeatingItsLevels() {
        // Corrected data joins the run up again: it starts on the resolved episode's day.
        let e = evaluation(since: since, duration: 8)
        let resolved = StoredEpisode(id: episodeId, activeSince: since, level: 7, lastNotifiedLevel: 7)
        let older = StoredEpisode(id: other, activeSince: since.adding(days: -40), level: 14, lastNotifiedLevel: 14)
        #expect(Episodes.plan(active: [], resolved: [older, resolved], evaluation: e)
                == EpisodePlan(upsert: e, notifyLevel: nil))
        // Past the level it had reached, it notifies the new one.
        let longer = evaluation(since: since, duration: 14)
        #expect(Episodes.plan(active: [], resolved: [resolved], evaluation: longer).notifyLevel == 14)
        // A resolved episode on another day is history: the new run notifies from 3.
        #expect(Episodes.plan(active: [], resolved: [older], evaluation: e).notifyLevel == 7)
    }
}
