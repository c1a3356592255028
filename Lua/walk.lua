-- The walk (walk.c, luahier_pushwalk): the Lua function every dispatch runs, offering the value
-- to each entry of a plan in order and applying what each answers (contract §4's table).
-- Loaded twice per state, as "=[luahier walk]" and stripped: lines that start with "--T|" are
-- kept only by the variant that records traces (the other has them as comments, so an
-- untraced dispatch pays no test per responder for a trace it does not record). Each
-- constant's upper-case C name below is replaced by that enum's value (luahier_enginetypes.h)
-- before loading: the numbers live in C alone.
local accept, copy, SKIP, newrecord = ...
-- One constant a declaration: in `local a <const>, b <const> = ...` only the last is a
-- compile-time constant, and the others become upvalues of the walk.
local STRIDE <const> = LUAHIER_ENTRY_STRIDE
local FILTER <const> = LUAHIER_ENTRY_FILTER
local CLASS <const> = LUAHIER_ENTRY_CLASS
local CROSS <const> = LUAHIER_ENTRY_CROSS
local RUN <const> = LUAHIER_ENTRY_RUN
local EVENTS <const> = LUAHIER_PLAN_EVENTS
local ERRORS <const> = LUAHIER_PLAN_ERRORS
local LAST <const> = LUAHIER_PLAN_LAST
local TRACE <const> = LUAHIER_PLAN_TRACE
local ENDED <const> = LUAHIER_PLAN_END
local RECEIVE <const> = LUAHIER_CLASS_RECEIVE
local HANDLE <const> = LUAHIER_CLASS_HANDLE
local CATCH <const> = LUAHIER_CLASS_CATCH
local ALERT <const> = LUAHIER_CLASS_ALERT
local ARRIVE <const> = LUAHIER_CLASS_ARRIVE
local REACHED <const> = LUAHIER_STATE_REACHED
local VALUE <const> = LUAHIER_STATE_VALUE
local TYPE <const> = LUAHIER_STATE_TYPE
local ERROR <const> = LUAHIER_STATE_ERROR
local BEFORE <const> = LUAHIER_STATE_BEFORE
local RECORD <const> = LUAHIER_STATE_RECORD
local PASSED <const> = LUAHIER_STATE_PASSED
local PASSEDTO <const> = LUAHIER_STATE_PASSEDTO
local HANDLED <const> = LUAHIER_STATUS_HANDLED
local STEP <const> = LUAHIER_STEP_STRIDE
local FIRSTSTEP <const> = LUAHIER_TRACE_STEPS
local KEPT <const> = LUAHIER_PLAN_RECORDS
-- A traced dispatch makes its record at its first step but one: a run of receives that passed
-- the value by waits (`pfrom` to `pto` in the walk, state[PASSED] and state[PASSEDTO]) until
-- another step is recorded. One whose record would say no more than "the entries from `from` to
-- `to` passed a value of type `vtype` by, then the entry at `at` handled it" (no `at`: the end)
-- shares a record its plan keeps, which no one writes to: most traced dispatches record just
-- that. Kept by `key`: the slot that handled the value, the domain's last slot (an entry's last
-- field) for the end, 0 for a record of no step; the walk takes the kept one when its steps are
-- the same, and else has this make and keep another.
--T|local function keptrecord(plan, key, from, to, vtype, at)
--T|  local record = newrecord(plan)
--T|  local n = FIRSTSTEP
--T|  if from and to >= from then record[n], record[n + 1], record[n + 3] = from, vtype, to n = n + STEP end
--T|  if at then record[n], record[n + 1], record[n + 2] = at, vtype, 'handled' end
--T|  plan[KEPT][key] = record
--T|  return record
--T|end
-- The record of a dispatch, made at its first step but one, with the run that waited (to `to`)
-- written first; returns it and where its next step goes.
--T|local function openrecord(plan, state, from, to, vtype)
--T|  local record = newrecord(plan)
--T|  state[RECORD] = record
--T|  if not to then return record, FIRSTSTEP end
--T|  record[FIRSTSTEP], record[FIRSTSTEP + 1], record[FIRSTSTEP + 3] = from, vtype, to
--T|  state[PASSED], state[PASSEDTO] = false, false
--T|  return record, FIRSTSTEP + STEP
--T|end
return function(plan, state, value, vtype, iserror, slot, raised)
--T|local record, full, n, pfrom, pto
  local last
  if not slot then
--T|  record, full, n = false, plan[TRACE] == 'full', FIRSTSTEP state[RECORD] = true
    if iserror then slot, last = plan[ERRORS], plan[LAST] - 1 else slot, last = plan[EVENTS], plan[ERRORS] - 1 end
  else
--T|  record, full = state[RECORD], plan[TRACE] == 'full' if record == true then record = newrecord(plan) state[RECORD] = record end
  -- The steps recorded before the error left the walk, up to the first with no entry; and
  -- if it left inside a run of plain receives, the ones of the run that passed the value by.
--T|  n = FIRSTSTEP while record[n] do n = n + STEP end
--T|  local from = state[PASSED] if from and slot > from then record[n], record[n + 1], record[n + 3] = from, vtype, state[PASSEDTO] or slot - STRIDE n = n + STEP end state[PASSED], state[PASSEDTO] = false, false
  -- The position rule: the raised error replaces the value at the entry that raised it.
--T|  local input = vtype
    value, vtype = accept(plan, slot, raised, true, value, iserror, true)
--T|  record[n], record[n + 1], record[n + 2], record[n + 3] = slot, input, 'raised', vtype if full then record[n + 4], record[n + 5] = state[BEFORE], copy(value) end n = n + STEP
    if slot < plan[ERRORS] then slot = plan[slot + CROSS] else slot = slot + STRIDE end
    iserror, last = true, plan[LAST] - 1
    state[VALUE], state[TYPE], state[ERROR] = value, vtype, true
  end
  -- Back here when the value changes domain, at the slot to go on from.
  ::walk::
  local i = slot
  do
    while i <= last do
      local run = plan[i + RUN]
      -- Full tracing copies the value before each call: its receives go one at a time.
--T|  if full then run = false end
      if run then
        -- Plain receives: "notHandled" (or the seeds' other name for it, "unhandled") goes
        -- on, "handled" stops, anything else replaces the value in its domain (or is a
        -- contract error, which accept raises). Traced, the entries that pass the value by
        -- are one step of the record, from `from` to the last of them, written when one does
        -- not (or the run ends); state[PASSED] says where they start while they are unwritten.
--T|    if pto then record, n = openrecord(plan, state, pfrom, pto, vtype) pto = nil end
--T|    local from = i state[PASSED] = i
        for j = i, run, STRIDE do
          state[REACHED] = j
          local answer = plan[j](value)
          if answer ~= 'notHandled' and answer ~= 'unhandled' then
--T|          if answer == 'handled' and not record then
--T|            record = plan[KEPT][j]
--T|            if not record or record[FIRSTSTEP] ~= from or record[FIRSTSTEP + 1] ~= vtype then record = keptrecord(plan, j, from, j - STRIDE, vtype, j) end
--T|            state[RECORD], state[PASSED] = false, false
--T|            return HANDLED, j, nil, record
--T|          end
--T|          if not record then record, n = openrecord(plan, state) end
--T|          if j > from then record[n], record[n + 1], record[n + 3] = from, vtype, j - STRIDE n = n + STEP end from = j + STRIDE state[PASSED] = from
            if answer == 'handled' then
--T|            record[n], record[n + 1], record[n + 2] = j, vtype, 'handled'
--T|            state[BEFORE], state[RECORD], state[PASSED] = false, false, false
--T|            do return HANDLED, j, nil, record end
              return HANDLED, j
            elseif answer ~= SKIP then
              local input = vtype
              value, vtype = accept(plan, j, answer, iserror, value, iserror, false)
--T|            record[n], record[n + 1], record[n + 2], record[n + 3] = j, input, iserror and 'error' or 'event', vtype n = n + STEP
              state[VALUE], state[TYPE], state[ERROR] = value, vtype, iserror
            end
          end
        end
        -- With no record yet, the run's step waits.
--T|    if run < from then state[PASSED] = false
--T|    elseif record then record[n], record[n + 1], record[n + 3] = from, vtype, run n = n + STEP state[PASSED] = false
--T|    else pfrom, pto = from, run state[PASSEDTO] = run end
        i = run + STRIDE
      else
        local filter = plan[i + FILTER]
        if not filter or filter[vtype] then
          state[REACHED] = i
--T|        if full then state[BEFORE] = copy(value) end
          local answer, extra = plan[i](value)
          local class = plan[i + CLASS]
          if answer == SKIP then
          -- Removed during this dispatch: passed by.
          elseif class == RECEIVE and (answer == 'notHandled' or answer == 'unhandled') then
--T|          if not record then record, n = openrecord(plan, state, pfrom, pto, vtype) pto = nil end
--T|          record[n], record[n + 1] = i, vtype n = n + STEP
          elseif class == HANDLE or (class == RECEIVE and answer == 'handled') or (class == ALERT and answer ~= nil) then
--T|          if not record then
--T|            local first = pto and pfrom or i
--T|            record = plan[KEPT][i]
--T|            if not record or record[FIRSTSTEP] ~= first or record[FIRSTSTEP + 1] ~= vtype or record[FIRSTSTEP + 3] ~= pto then record = keptrecord(plan, i, first, pto or i - STRIDE, vtype, i) end
--T|            state[BEFORE], state[RECORD], state[PASSED], state[PASSEDTO] = false, false, false, false
--T|            return HANDLED, i, class == ALERT and extra or nil, record
--T|          end
--T|          record[n], record[n + 1], record[n + 2] = i, vtype, 'handled'
--T|          state[BEFORE], state[RECORD] = false, false
--T|          do return HANDLED, i, class == ALERT and extra or nil, record end
            return HANDLED, i, class == ALERT and extra or nil
          elseif class == ARRIVE then
            -- The safety check at a declaring node: nil passes; a violation replaces the value.
            if answer ~= nil then
--T|          if pto then record, n = openrecord(plan, state, pfrom, pto, vtype) pto = nil end
              value, vtype = answer, extra
              state[VALUE], state[TYPE], state[ERROR] = value, vtype, true
              if not iserror then iserror, last, slot = true, plan[LAST] - 1, plan[i + CROSS] goto walk end
            end
          elseif class ~= ALERT then
            -- A replacement: receive and transform keep the domain; catch makes it an event.
            -- Whatever a kind may not return is a contract error, which accept raises.
            local input, toerror = vtype, iserror and class ~= CATCH
--T|          if not record then record, n = openrecord(plan, state, pfrom, pto, vtype) pto = nil end
            value, vtype = accept(plan, i, answer, toerror, value, iserror, false)
--T|          record[n], record[n + 1], record[n + 2], record[n + 3] = i, input, toerror and 'error' or 'event', vtype if full then record[n + 4], record[n + 5] = state[BEFORE], copy(value) end n = n + STEP
            state[VALUE], state[TYPE], state[ERROR] = value, vtype, toerror
            if toerror ~= iserror then
              iserror, slot = toerror, plan[i + CROSS]
              last = (toerror and plan[LAST] or plan[ERRORS]) - 1
              goto walk
            end
          end
        end
        i = i + STRIDE
      end
    end
  end
--T|if not record then
--T|  local from, key, input = pto and pfrom, pto and last or 0, pto and vtype
--T|  record = plan[KEPT][key]
--T|  if not record or record[FIRSTSTEP] ~= from or record[FIRSTSTEP + 1] ~= input or record[FIRSTSTEP + 3] ~= pto then record = keptrecord(plan, key, from, pto, input) end
--T|end
--T|state[BEFORE], state[RECORD], state[PASSED], state[PASSEDTO] = false, false, false, false
--T|do return plan[ENDED], last + 1, nil, record end
  return plan[ENDED], last + 1
end
