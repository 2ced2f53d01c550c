package io.txbox.redis;

import io.txbox.redis.RedisLink.Script;

/**
 * The Redis store's Lua scripts. An entry is a hash: {@code s} state (P processing, C completed,
 * F failed or released, D dead), {@code f} fingerprint ('' for none), {@code a} attempts,
 * {@code tk} fencing token and {@code lu} lease end in Redis milliseconds (while P), {@code r}
 * result, {@code rs} result status, {@code h} headers, {@code e} last error. The fencing
 * counter is a separate key without TTL, so tokens keep growing after entries expire.
 */
final class StoreScripts {
    private StoreScripts() {}

    /** KEYS: entry, fence counter. ARGV: fingerprint, lease ms, max attempts, retention ms. */
    static final Script CLAIM = new Script("claim", """
            local t = redis.call('TIME')
            local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
            local lease = tonumber(ARGV[2])
            local ttl = tonumber(ARGV[4])
            local e = redis.call('HMGET', KEYS[1], 's', 'f', 'a', 'lu', 'e')
            local a = 0
            local fp = ARGV[1]
            if e[1] then
              if e[2] ~= '' and fp ~= '' and e[2] ~= fp then return {'M'} end
              if e[2] ~= '' then fp = e[2] end
              a = tonumber(e[3])
              if e[1] == 'C' then
                local v = redis.call('HMGET', KEYS[1], 'r', 'rs', 'h')
                local has = 0
                if v[1] then has = 1 end
                return {'C', a, has, v[1] or '', v[2] or '', v[3] or ''}
              end
              if e[1] == 'D' then return {'D', a, e[5] or ''} end
              if e[1] == 'P' and tonumber(e[4]) > now then return {'I', a} end
              if e[1] == 'P' and a >= tonumber(ARGV[3]) then
                local reason = 'lease expired on attempt ' .. a .. ' of ' .. ARGV[3] .. '; last error: ' .. (e[5] or 'none')
                redis.call('HSET', KEYS[1], 's', 'D', 'e', reason)
                redis.call('HDEL', KEYS[1], 'tk', 'lu')
                redis.call('PEXPIRE', KEYS[1], ttl)
                return {'D', a, reason}
              end
            end
            a = a + 1
            local tk = redis.call('INCR', KEYS[2])
            local lu = now + lease
            redis.call('HSET', KEYS[1], 's', 'P', 'f', fp, 'a', a, 'tk', tk, 'lu', lu)
            redis.call('PEXPIRE', KEYS[1], math.max(ttl, lease))
            return {'A', a, tk, lu}
            """);

    /** KEYS: entry. ARGV: token, retention ms, has result (1/0), result, status ('' none), headers ('' none). */
    static final Script COMPLETE = new Script("complete", """
            local e = redis.call('HMGET', KEYS[1], 's', 'tk')
            if e[1] ~= 'P' or e[2] ~= ARGV[1] then return {0} end
            redis.call('HDEL', KEYS[1], 'tk', 'lu', 'r', 'rs', 'h')
            redis.call('HSET', KEYS[1], 's', 'C')
            if ARGV[3] == '1' then redis.call('HSET', KEYS[1], 'r', ARGV[4]) end
            if ARGV[5] ~= '' then redis.call('HSET', KEYS[1], 'rs', ARGV[5]) end
            if ARGV[6] ~= '' then redis.call('HSET', KEYS[1], 'h', ARGV[6]) end
            redis.call('PEXPIRE', KEYS[1], ARGV[2])
            return {1}
            """);

    /** KEYS: entry. ARGV: token, max attempts, error, retention ms. */
    static final Script FAIL = new Script("fail", """
            local e = redis.call('HMGET', KEYS[1], 's', 'tk', 'a')
            if e[1] ~= 'P' or e[2] ~= ARGV[1] then return {'L'} end
            local s = 'F'
            if tonumber(e[3]) >= tonumber(ARGV[2]) then s = 'D' end
            redis.call('HSET', KEYS[1], 's', s, 'e', ARGV[3])
            redis.call('HDEL', KEYS[1], 'tk', 'lu')
            redis.call('PEXPIRE', KEYS[1], ARGV[4])
            return {s, tonumber(e[3])}
            """);

    /** KEYS: entry. ARGV: token, retention ms. A release gives the attempt back. */
    static final Script RELEASE = new Script("release", """
            local e = redis.call('HMGET', KEYS[1], 's', 'tk')
            if e[1] ~= 'P' or e[2] ~= ARGV[1] then return {0} end
            redis.call('HSET', KEYS[1], 's', 'F')
            redis.call('HINCRBY', KEYS[1], 'a', -1)
            redis.call('HDEL', KEYS[1], 'tk', 'lu')
            redis.call('PEXPIRE', KEYS[1], ARGV[2])
            return {1}
            """);

    /** KEYS: entry. ARGV: retention ms. */
    static final Script RESET_DEAD = new Script("reset-dead", """
            if redis.call('HGET', KEYS[1], 's') ~= 'D' then return {0} end
            redis.call('HSET', KEYS[1], 's', 'F', 'a', 0)
            redis.call('PEXPIRE', KEYS[1], ARGV[1])
            return {1}
            """);

    static Script[] all() {
        return new Script[] {CLAIM, COMPLETE, FAIL, RELEASE, RESET_DEAD};
    }
}
