#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Runs work on a thread with a large stack. Lua allows 200 nested C calls (metamethods,
/// `gsub` callbacks, `table.sort` comparators, nested dispatches), and some of those frames
/// are large: on a 512 KiB secondary thread legal scripts can overflow the C stack. Call the
/// engine from such a thread (the CLI does) or from a main thread with 8 MiB.
public enum LargeStack {
    /// 256 MiB of address space; only the pages used are ever committed.
    public static let defaultSize = 256 << 20

    /// Runs `body` on a new thread with `size` bytes of stack and waits for it.
    public static func run<T>(size: Int = defaultSize, _ body: () -> T) -> T {
        var result: T?
        withoutActuallyEscaping(body) { escapable in
            if let thread = spawn(size: size, { result = escapable() }) {
                thread.join()
            } else {
                // No thread could be made: run here rather than fail.
                result = escapable()
            }
        }
        return result!
    }

    /// Starts `body` on a new thread with `size` bytes of stack; `join` waits for it, and one
    /// of `join` or `detach` must be called: until then the thread's stack stays mapped, also
    /// once it has ended. Nil when no thread could be made.
    static func spawn(size: Int = defaultSize, _ body: @escaping () -> Void) -> Joinable? {
        start(size: size, detached: false, body)
    }

    /// Starts `body` on a new thread with `size` bytes of stack that no one waits for: its
    /// stack is given back when it ends. False when no thread could be made. (Threads started
    /// to be waited for and never joined kept their stacks: a reload over HTTP left 260 KiB
    /// mapped each, an attacker's find.)
    static func detached(size: Int = defaultSize, _ body: @escaping () -> Void) -> Bool {
        start(size: size, detached: true, body) != nil
    }

    private static func start(size: Int, detached: Bool, _ body: @escaping () -> Void) -> Joinable? {
        // Allocated, not `pthread_attr_t()`: that zero initializer is imported with the
        // module that first included the type (CDispatch), which this file does not import.
        let attributes = UnsafeMutablePointer<pthread_attr_t>.allocate(capacity: 1)
        defer { attributes.deallocate() }
        pthread_attr_init(attributes)
        defer { pthread_attr_destroy(attributes) }
        pthread_attr_setstacksize(attributes, size)
        if detached { pthread_attr_setdetachstate(attributes, Int32(PTHREAD_CREATE_DETACHED)) }
        #if canImport(Glibc)
        var thread = pthread_t()
        #else
        var thread: pthread_t?
        #endif
        let context = Unmanaged.passRetained(Job(body)).toOpaque()
        let created = pthread_create(&thread, attributes, { context in
            Unmanaged<Job>.fromOpaque(context!).takeRetainedValue().work()
            return nil
        }, context)
        guard created == 0 else {
            Unmanaged<Job>.fromOpaque(context).release()
            return nil
        }
        #if canImport(Glibc)
        return Joinable(thread: thread)
        #else
        return Joinable(thread: thread!)
        #endif
    }

    /// A started thread, to be joined or detached.
    struct Joinable {
        let thread: pthread_t
        /// Waits for the thread to end; its stack is then given back.
        func join() { pthread_join(thread, nil) }
        /// Lets the thread end unwaited for; its stack is given back when it does.
        func detach() { pthread_detach(thread) }
    }

    /// The work handed to the thread; the caller waits for the join before reading back.
    private final class Job {
        let work: () -> Void
        init(_ work: @escaping () -> Void) { self.work = work }
    }
}
