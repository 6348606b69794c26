import Foundation

extension QueueItem {
    /// A step of a notification's follow-up chain (sql/057): its payload names the step
    /// (`follow_up`: the row that started the chain, the step, the loop, what satisfies it).
    public var isFollowUpStep: Bool {
        if case .object? = payload?["follow_up"] { return true }
        return false
    }
}
