/// A reminder pass suite: every channel goes to the log adapter, since these passes count what is sent
/// and skipped, not what a provider answers.
protocol ReminderPassSuite {}

extension ReminderPassSuite {
    var logAll: [String: String] {
        ["HERALD_CHANNEL_PUSH": "log", "HERALD_CHANNEL_EMAIL": "log", "HERALD_CHANNEL_SMS": "log"]
    }
}
