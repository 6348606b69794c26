import HeraldChannels
import HeraldCore

extension DeliveryContext {
    /// The plan's copy of a batch's loaded context.
    init(_ ctx: BatchContext) {
        self.init()
        profiles = ctx.profiles
        alerts = ctx.alerts
        deviceTokens = ctx.deviceTokens
        unusableTokens = ctx.unusableTokens
        unreadInApp = ctx.unreadInApp
        history = ctx.history
        delivered = ctx.delivered
        familyAdmins = ctx.familyAdmins
        readElsewhere = ctx.readElsewhere
    }
}

extension ChannelRoutes {
    /// What the plan needs to know of each channel's route: log, inbox, or its providers in failover
    /// order and the providers' own address (the webhook's URL).
    var facts: [Channel: RouteFacts] {
        routes.mapValues { route in
            switch route {
            case .log: return RouteFacts(mode: .log)
            case .inbox: return RouteFacts(mode: .inbox)
            case .providers(let adapters, let order):
                let ordered = order.filter { adapters[$0] != nil } + adapters.keys.sorted().filter { !order.contains($0) }
                return RouteFacts(mode: .providers, providers: ordered,
                                  providerAddress: ordered.lazy.compactMap { adapters[$0]?.providerAddress }.first)
            }
        }
    }
}
