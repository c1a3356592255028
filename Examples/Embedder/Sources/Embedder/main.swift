// A Swift program that embeds LuaHierarchy as a rules engine: a pool of states with rules as
// text, a Swift setup on every state (a host function, a typed responder), limits, a logger,
// Values in and Outcomes out, and a reload. It checks what it gets and exits 1 if anything
// is not as the README says.
import LuaHierarchy
import Logging
#if canImport(Glibc)
import Glibc
#endif

struct PaymentDeclined: Decodable, Sendable {
    let message: String
    let amount: Int
}

/// Kept by the typed responder, from every state's thread.
final class Audit: @unchecked Sendable {
    private var lock = pthread_mutex_t()
    private var declined: [Int] = []
    init() { pthread_mutex_init(&lock, nil) }
    func record(_ amount: Int) {
        pthread_mutex_lock(&lock)
        declined.append(amount)
        pthread_mutex_unlock(&lock)
    }
    var amounts: [Int] {
        pthread_mutex_lock(&lock)
        defer { pthread_mutex_unlock(&lock) }
        return declined.sorted()
    }
}

func rules(limit: Int) -> String {
    """
    local orders = hier.root:child("orders")
    orders:receiveEvent("Charge", function(e)
      if e.amount >= reviewLimit() then return {type = "NeedsReview", amount = e.amount} end
      if e.amount < 0 then error({type = "PaymentDeclined", message = "negative", amount = e.amount}) end
      return "handled"
    end)
    orders:handleEvent("NeedsReview", function(e) end)
    -- \(limit)
    """
}

var failures = 0
@MainActor func check(_ condition: Bool, _ what: String) {
    print(condition ? "ok:" : "FAILED:", what)
    if !condition { failures += 1 }
}

let audit = Audit()
var options = RulesPool.Options(rulesSource: rules(limit: 500), name: "orders.lua", workers: 2)
options.hierarchy.limits = Limits(time: 5, memory: 64 << 20, dispatchTime: 1)
options.hierarchy.logger = Logger(label: "embedder")
options.setup = { hierarchy in
    hierarchy.register(function: "reviewLimit") { _ in 500 }
    hierarchy.root.handleError(PaymentDeclined.self) { declined in audit.record(declined.amount) }
}
let pool = try RulesPool(options: options)

let small = try await pool.trigger(["type": "Charge", "amount": 20], at: "/orders")
check(small.status == .handled && small.by == "/orders", "a small charge is handled at /orders")
let large = try await pool.trigger(["type": "Charge", "amount": 900.0], at: "/orders")
check(large.status == .handled && large.value.typeName == "NeedsReview" && large.value["amount"]?.intValue == 900,
      "a large charge (sent as 900.0) needs review")
let declined = try await pool.trigger(["type": "Charge", "amount": -5], at: "/orders")
check(declined.status == .handled && declined.by == "/" && audit.amounts == [-5],
      "a raised PaymentDeclined reaches the typed Swift responder at the root")
check(declined.revision?.number == 1, "outcomes carry the revision that answered")

let outcomes = try await withThrowingTaskGroup(of: Outcome.self) { group in
    for amount in 1...20 { group.addTask { try await pool.trigger(["type": "Charge", "amount": .int(Int64(amount))], at: "/orders") } }
    var answered: [Outcome] = []
    for try await outcome in group { answered.append(outcome) }
    return answered
}
check(outcomes.count == 20 && outcomes.allSatisfy { $0.status == .handled }, "20 tasks at once, each answered")

switch await pool.reload() {
case .unchanged(let revision): check(revision.number == 1, "a reload of the same text changes nothing")
default: check(false, "a reload of the same text changes nothing")
}

await pool.shutDown()
print(failures == 0 ? "all checks passed" : "\(failures) checks failed")
if failures > 0 { exit(1) }
