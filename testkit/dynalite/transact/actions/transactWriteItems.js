// TransactWriteItems for dynalite 4.0.0: installed into node_modules/dynalite/actions by ../install.js.
// Each operation's key, condition and update are dynalite's own (db/index.js, actions/updateItem.js); this file
// only makes them all-or-nothing: lock every item, read them all, check every condition, then write all or none.
var async = require('async'),
  db = require('../db'),
  updateItem = require('./updateItem'),
  OPERATIONS = require('../validations/transactWriteItems').OPERATIONS

// AWS: "The aggregate size of the items in the transaction cannot exceed 4 MB." Measured here as the items after
// the transaction (the Put items, the updated items) plus the items a Delete or ConditionCheck names.
var MAX_TRANSACTION_SIZE = 4 * 1024 * 1024

module.exports = function transactWriteItems (store, data, cb) {
  var ops = data.TransactItems.map(function (item) {
    var type = OPERATIONS.filter(function (name) { return item[name] != null })[0]
    return { type: type, params: item[type] }
  })

  resolveTables(store, ops, function (err) {
    if (err) return cb(err)

    var seen = Object.create(null)
    for (var i = 0; i < ops.length; i++) {
      var op = ops[i], invalid
      if (op.type == 'Put') {
        invalid = db.validateItem(op.params.Item, op.table)
      }
      else {
        invalid = db.validateKey(op.params.Key, op.table) ||
          (op.type == 'Update' ? db.validateUpdates(null, op.params._updates, op.table) : null)
      }
      if (invalid != null) return cb(invalid)
      op.itemDb = store.getItemDb(op.params.TableName)
      op.key = db.createKey(op.type == 'Put' ? op.params.Item : op.params.Key, op.table)
      op.lockId = op.params.TableName + '\u0000' + op.key
      if (seen[op.lockId])
        return cb(db.validationError('Transaction request cannot include multiple operations on one item'))
      seen[op.lockId] = true
    }

    // One global order (table, then key) so that concurrent transactions cannot deadlock
    var lockOrder = ops.slice().sort(function (a, b) { return a.lockId < b.lockId ? -1 : a.lockId > b.lockId ? 1 : 0 })
    lockAll(lockOrder, function (release) {
      cb = release(cb)

      async.eachSeries(ops, function (op, done) {
        op.itemDb.get(op.key, function (err, existing) {
          if (err && err.name != 'NotFoundError') return done(err)
          op.existing = existing
          done()
        })
      }, function (err) {
        if (err) return cb(err)

        var reasons = ops.map(evaluate)

        var size = ops.reduce(function (sum, op) {
          return sum + db.itemSize(op.type == 'Put' ? op.params.Item : op.newItem || op.existing || op.params.Key)
        }, 0)
        if (size > MAX_TRANSACTION_SIZE)
          return cb(db.validationError('Transaction request size has exceeded the maximum allowed size of 4 MB'))

        if (reasons.some(function (reason) { return reason.Code != 'None' }))
          return cb(cancelled(reasons))

        async.eachSeries(ops, write, function (err) {
          if (err) return cb(err)
          var res = {}
          if (~[ 'TOTAL', 'INDEXES' ].indexOf(data.ReturnConsumedCapacity))
            res.ConsumedCapacity = consumedCapacity(data, ops)
          cb(null, res)
        })
      })
    })
  })

  // The operation's cancellation reason; for a Put or an Update whose condition holds, also its new item.
  function evaluate (op) {
    var failed = db.checkConditional(op.params, op.existing)
    if (failed != null) {
      var reason = { Code: 'ConditionalCheckFailed', Message: failed.body.message }
      if (op.existing && op.params.ReturnValuesOnConditionCheckFailure == 'ALL_OLD') reason.Item = op.existing
      return reason
    }
    if (op.type == 'Put') {
      op.newItem = op.params.Item
    }
    else if (op.type == 'Update') {
      var item = op.existing ? updateItem.deepClone(op.existing) : op.params.Key
      var invalid = updateItem.applyUpdateExpression(op.params._updates.sections, op.table, item)
      if (invalid == null && db.itemSize(item) > store.options.maxItemSize)
        invalid = db.validationError('Item size to update has exceeded the maximum allowed size')
      if (invalid != null) return { Code: 'ValidationError', Message: invalid.body.message }
      op.newItem = item
    }
    return { Code: 'None' }
  }

  function write (op, done) {
    if (op.type == 'ConditionCheck') return done()
    var item = op.type == 'Delete' ? null : op.newItem
    db.updateIndexes(store, op.table, op.existing, item, function (err) {
      if (err) return done(err)
      if (item == null) return op.itemDb.del(op.key, done)
      op.itemDb.put(op.key, item, done)
    })
  }
}

function resolveTables (store, ops, cb) {
  var tables = Object.create(null)
  async.eachSeries(ops, function (op, done) {
    var name = op.params.TableName
    if (tables[name]) {
      op.table = tables[name]
      return done()
    }
    store.getTable(name, function (err, table) {
      if (err) return done(err)
      op.table = tables[name] = table
      done()
    })
  }, cb)
}

// Takes each item's lock in the given order; exec gets a releaser like a single lock's.
function lockAll (ops, exec) {
  var releases = []
  ;(function next (i) {
    if (i == ops.length) {
      return exec(function (done) {
        return releases.reduce(function (fn, release) { return release(fn) }, done)
      })
    }
    ops[i].itemDb.lock(ops[i].key, function (release) {
      releases.push(release)
      next(i + 1)
    })
  })(0)
}

function cancelled (reasons) {
  var msg = 'Transaction cancelled, please refer cancellation reasons for specific reasons [' +
    reasons.map(function (reason) { return reason.Code }).join(', ') + ']'
  var err = new Error(msg)
  err.statusCode = 400
  err.body = {
    __type: 'com.amazonaws.dynamodb.v20120810#TransactionCanceledException',
    Message: msg,
    CancellationReasons: reasons,
  }
  return err
}

// Two write units per item, as DynamoDB charges transactional writes, summed per table like BatchWriteItem.
function consumedCapacity (data, ops) {
  var tableUnits = Object.create(null)
  ops.forEach(function (op) {
    var units = db.addConsumedCapacity({ TableName: op.params.TableName, ReturnConsumedCapacity: 'TOTAL' },
      false, op.newItem || op.existing, op.existing).CapacityUnits * 2
    tableUnits[op.params.TableName] = (tableUnits[op.params.TableName] || 0) + units
  })
  return Object.keys(tableUnits).map(function (table) {
    return {
      CapacityUnits: tableUnits[table],
      TableName: table,
      Table: data.ReturnConsumedCapacity == 'INDEXES' ? { CapacityUnits: tableUnits[table] } : undefined,
    }
  })
}
